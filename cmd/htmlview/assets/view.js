'use strict';
(function () {
  performance.mark('lm-start');
  const D = JSON.parse(document.getElementById('data').textContent);
  performance.mark('lm-parsed');
  const S = D.s;
  const ROW = 22, INDENT = 14;
  const $ = (id) => document.getElementById(id);
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
  const RES = { ' ': 0, p: 1, w: 2, e: 3 };
  const RESNAME = ['', 'pass', 'warning', 'error'];
  const BAND = { s: 'sure', c: 'check', u: 'unsure' };
  const KIND = { '1': '1:1', f: 'fused N:1', a: 'absorbed', e: 'experts', r: 'root', m: 'manual' };
  const BANDCOL = { s: '#2f9e44', c: '#d99a00', u: '#d3300b', '-': '#7a7a7a', m: '#1f6fd1' };

  // ---- the two trees -------------------------------------------------
  function mkSide(k) {
    const r = D.sides[k], n = r.n.length;
    const T = {
      k, label: r.label, src: r.src, n, name: r.n, cls: r.c, kids: r.k, res: r.res,
      parent: new Int32Array(n), end: new Int32Array(n), depth: new Uint16Array(n),
      group: new Int32Array(n).fill(-1), groups: [], why: new Map(),
      pairOf: new Int32Array(n).fill(-1), wsub: new Uint8Array(n), inner: new Uint8Array(n),
      exp: new Uint8Array(n), gexp: null, rows: new Int32Array(0), rowOf: new Int32Array(n).fill(-1),
      groupRow: null, paths: null, lpaths: null, byPath: null, sel: -1,
      scroll: $('scroll' + k), spacer: $('spacer' + k), head: $('head' + k), layer: document.createElement('div'),
    };
    const st = [], rem = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      while (st.length && rem[st[st.length - 1]] === 0) T.end[st.pop()] = i;
      const top = st.length ? st[st.length - 1] : -1;
      T.parent[i] = top;
      T.depth[i] = st.length;
      if (top >= 0) rem[top]--;
      st.push(i);
      rem[i] = T.kids[i];
    }
    while (st.length) T.end[st.pop()] = n;
    for (let j = 0; j < r.g.length; j += 2) {
      const g = { first: r.g[j], members: [] };
      let c = r.g[j];
      for (let m = 0; m < r.g[j + 1]; m++) { g.members.push(c); T.group[c] = T.groups.length; c = T.end[c]; }
      T.groups.push(g);
    }
    T.gexp = new Uint8Array(T.groups.length);
    T.groupRow = new Int32Array(T.groups.length).fill(-1);
    for (let j = 0; j < r.why.length; j += 2) T.why.set(r.why[j], S[r.why[j + 1]]);
    for (let j = 0; j < r.in.length; j += 2) T.inner[r.in[j]] = r.in[j + 1];
    for (let i = n - 1; i >= 0; i--) {
      const own = Math.max(RES[T.res[i]] || 0, T.inner[i]);
      if (own > T.wsub[i]) T.wsub[i] = own;
      const p = T.parent[i];
      if (p >= 0 && T.wsub[i] > T.wsub[p]) T.wsub[p] = T.wsub[i];
    }
    T.spacer.appendChild(T.layer);
    return T;
  }
  const A = mkSide(0), B = mkSide(1), SIDES = [A, B];
  performance.mark('lm-sides');
  const other = (T) => (T === A ? B : A);

  function children(T, i) {
    const out = [];
    for (let c = i + 1; c < T.end[i]; c = T.end[c]) out.push(c);
    return out;
  }
  function path(T, i) {
    if (!T.paths) T.paths = new Array(T.n);
    if (T.paths[i] !== undefined) return T.paths[i];
    const p = T.parent[i];
    const s = p < 0 ? '' : (p === 0 ? S[T.name[i]] : path(T, p) + '.' + S[T.name[i]]);
    T.paths[i] = s;
    return s;
  }
  function lookup(T, p) {
    if (!T.byPath) { T.byPath = new Map(); for (let i = 0; i < T.n; i++) T.byPath.set(path(T, i), i); }
    const r = T.byPath.get(p);
    return r === undefined ? -1 : r;
  }
  function childNamed(T, i, name) {
    for (let c = i + 1; c < T.end[i]; c = T.end[c]) if (S[T.name[c]] === name) return c;
    return -1;
  }
  function lookupRel(T, i, rel) {
    if (i < 0) return -1;
    if (rel === '') return i;
    for (const seg of rel.split('.')) { i = childNamed(T, i, seg); if (i < 0) return -1; }
    return i;
  }
  function rel(T, anc, d) {
    const segs = [];
    for (let x = d; x !== anc && x >= 0; x = T.parent[x]) segs.push(S[T.name[x]]);
    return segs.reverse().join('.');
  }
  const isAnc = (T, a, d) => a < d && d < T.end[a];

  // ---- pairs -----------------------------------------------------------
  const pairs = [];
  (function () {
    const P = D.p;
    let a = 0, b = 0;
    for (let i = 0; i < P.a.length; i++) {
      a += P.a[i]; b += P.b[i];
      pairs.push({ a: [a], b: [b], band: P.band[i], kind: P.kind[i], sc: P.sc[i], mg: P.mg[i], rs: P.rs[i] >= 0 ? S[P.rs[i]] : '', pv: P.pv[i] === '1', note: '' });
    }
    for (let j = 0; j < P.xa.length; j += 2) pairs[P.xa[j]].a.push(P.xa[j + 1]);
    for (let j = 0; j < P.xb.length; j += 2) pairs[P.xb[j]].b.push(P.xb[j + 1]);
    for (let j = 0; j < P.note.length; j += 2) pairs[P.note[j]].note = S[P.note[j + 1]];
    pairs.forEach(linkPair);
  })();
  function linkPair(p, i) {
    if (i === undefined) i = pairs.indexOf(p);
    for (const x of p.a) if (A.pairOf[x] < 0) A.pairOf[x] = i;
    for (const x of p.b) if (B.pairOf[x] < 0) B.pairOf[x] = i;
  }
  const partners = (T, i) => { const p = T.pairOf[i]; return p < 0 ? [] : (T === A ? pairs[p].b : pairs[p].a); };

  // res: where msprobe's resolver sends each NPU module under the mapping.
  const res = new Int32Array(A.n).fill(-1), resBy = new Int32Array(B.n);
  pairs.forEach((p) => { if (p.a.length === 1 && p.b.length === 1) res[p.a[0]] = p.b[0]; });
  for (let j = 0; j < D.rx.length; j += 2) res[D.rx[j]] = D.rx[j + 1];
  res[0] = 0;
  for (let i = 0; i < A.n; i++) if (res[i] >= 0) resBy[res[i]]++;

  // ---- visible rows ----------------------------------------------------
  function build(T) {
    const out = [];
    const add = (i) => { out.push(i); if (T.exp[i]) addKids(i); };
    const addKids = (i) => {
      for (let c = i + 1; c < T.end[i];) {
        const g = T.group[c];
        if (g >= 0 && T.groups[g].first === c) {
          out.push(-(g + 1));
          const ms = T.groups[g].members;
          if (T.gexp[g]) ms.forEach(add);
          c = T.end[ms[ms.length - 1]];
          continue;
        }
        add(c);
        c = T.end[c];
      }
    };
    add(0);
    T.rows = Int32Array.from(out);
    T.rowOf.fill(-1);
    T.groupRow.fill(-1);
    for (let r = 0; r < out.length; r++) { const v = out[r]; if (v >= 0) T.rowOf[v] = r; else T.groupRow[-v - 1] = r; }
    T.spacer.style.height = out.length * ROW + 'px';
  }
  function initialExpand(T) {
    T.exp[0] = 1;
    let level = [0], shown = 1 + children(T, 0).length;
    while (level.length) {
      const next = [];
      for (const i of level) for (const c of children(T, i)) if (T.group[c] < 0 && T.kids[c] > 0) next.push(c);
      let add = 0;
      for (const c of next) add += displayedKids(T, c);
      if (shown + add > 300) break;
      for (const c of next) T.exp[c] = 1;
      shown += add;
      level = next;
    }
  }
  function displayedKids(T, i) {
    let k = 0;
    for (let c = i + 1; c < T.end[i]; c = T.end[c]) if (T.group[c] < 0 || T.groups[T.group[c]].first === c) k++;
    return k;
  }

  // ---- drawing ---------------------------------------------------------
  let hover = null; // {side, nodes on the other side, pair}
  let pick = [-1, -1];
  function label(T, i) {
    const nm = S[T.name[i]], c = S[T.cls[i]];
    if (T.parent[i] < 0) return '<span class="cl">' + esc(c || '(model)') + '</span>';
    return '<span class="nm">(' + esc(nm) + '): </span><span class="cl">' + esc(c || '?') + '</span>';
  }
  function rowHTML(T, r) {
    const v = T.rows[r], top = r * ROW;
    if (v < 0) {
      const g = T.groups[-v - 1], ms = g.members, f = ms[0], l = ms[ms.length - 1];
      let w = 0, paired = 0;
      for (const m of ms) { if (T.wsub[m] > w) w = T.wsub[m]; if (T.pairOf[m] >= 0) paired++; }
      const cls = 'row' + (paired === 0 ? ' un' : '');
      return '<div class="' + cls + '" data-r="' + r + '" style="top:' + top + 'px;padding-left:' + (T.depth[f] * INDENT + 4) + 'px">' +
        '<span class="tw">' + (T.gexp[-v - 1] ? '▾' : '▸') + '</span><span class="grp">(' + esc(S[T.name[f]]) + '-' + esc(S[T.name[l]]) + '): ' + ms.length + ' x </span>' +
        '<span class="cl">' + esc(S[T.cls[f]]) + '</span><span class="bd b-x">' + paired + '/' + ms.length + ' paired</span>' +
        (w >= 2 && !T.gexp[-v - 1] ? '<span class="dot d-' + 'pwe'[w - 1] + '" title="' + RESNAME[w] + ' inside"></span>' : '') + '</div>';
    }
    const i = v, p = T.pairOf[i], own = T.res[i];
    let cls = 'row';
    if (own !== ' ') cls += ' r-' + own;
    else if (p < 0 && i !== 0) cls += ' un';
    if (T.sel === i) cls += ' sel';
    if (pick[T.k] === i) cls += ' pick';
    if (hover && hover.rows[T.k].has(i)) cls += ' hl';
    let bd = '';
    if (p >= 0) {
      const q = pairs[p];
      if (q.kind === 'm') bd += '<span class="bd b-m">' + (q.sidecar ? 'manual, sidecar' : 'manual') + '</span>';
      else if (q.band === 'c' || q.band === 'u') bd += '<span class="bd b-' + q.band + '">' + BAND[q.band] + '</span>';
      if (q.kind === 'f' || q.kind === 'e' || q.kind === 'a') bd += '<span class="bd b-f">' + KIND[q.kind] + '</span>';
    }
    const w = T.kids[i] && !T.exp[i] ? T.wsub[i] : T.inner[i];
    if (w >= 2 && w > (RES[own] || 0)) bd += '<span class="dot d-' + 'pwe'[w - 1] + '" title="' + RESNAME[w] + ' inside"></span>';
    return '<div class="' + cls + '" data-r="' + r + '" style="top:' + top + 'px;padding-left:' + (T.depth[i] * INDENT + 4) + 'px">' +
      '<span class="tw">' + (T.kids[i] ? (T.exp[i] ? '▾' : '▸') : '') + '</span>' + label(T, i) + bd + '</div>';
  }
  function visibleRange(T) {
    const h = T.scroll.clientHeight || 600;
    const first = Math.max(0, Math.floor(T.scroll.scrollTop / ROW) - 10);
    return [first, Math.min(T.rows.length, first + Math.ceil(h / ROW) + 20)];
  }
  function render(T) {
    const [f, l] = visibleRange(T);
    let h = '';
    for (let r = f; r < l; r++) h += rowHTML(T, r);
    T.layer.innerHTML = h;
  }
  // A suggest run's counts (D.sum.cnt, infer.Counts: the modules msprobe
  // dumps, paired, N:1 parts) plus the matches made on this page; without
  // them, the tree's nodes.
  const P0 = pairs.length;
  function counts(T) {
    const c = D.sum.cnt;
    if (c) return { n: c[3 * T.k], paired: c[3 * T.k + 1] + pairs.length - P0, parts: c[3 * T.k + 2], dumps: true };
    let un = 0;
    for (let i = 1; i < T.n; i++) if (T.pairOf[i] < 0) un++;
    return { n: T.n - 1, paired: T.n - 1 - un, parts: 0, dumps: false };
  }
  function head(T) {
    const c = counts(T);
    T.head.innerHTML = esc(T.label) + ' <small>' + esc(T.src) + ' · ' + c.n + ' modules' + (c.dumps ? ' msprobe dumps' : '') + ', ' + (c.n - c.paired) + ' unmatched</small>';
  }
  let frame = 0, timer = 0;
  function draw() {
    cancelAnimationFrame(frame); clearTimeout(timer); frame = timer = 0;
    render(A); render(B); gutter();
  }
  function redraw() {
    // a tab in the background gets no animation frames: the timer draws then
    if (!frame) { frame = requestAnimationFrame(draw); timer = setTimeout(draw, 50); }
  }
  // displayed row of node i: its own, or its collapsed group's
  function shownRow(T, i) {
    if (T.rowOf[i] >= 0) return T.rowOf[i];
    const g = T.group[i];
    if (g >= 0 && T.groupRow[g] >= 0 && !T.gexp[g]) return T.groupRow[g];
    return -1;
  }
  function gutter() {
    const cv = $('gutter'), rc = cv.getBoundingClientRect(), dpr = window.devicePixelRatio || 1;
    if (cv.width !== Math.round(rc.width * dpr) || cv.height !== Math.round(rc.height * dpr)) {
      cv.width = Math.round(rc.width * dpr); cv.height = Math.round(rc.height * dpr);
    }
    const g = cv.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, rc.width, rc.height);
    const y0 = A.scroll.getBoundingClientRect().top - rc.top - A.scroll.scrollTop + ROW / 2;
    const y1 = B.scroll.getBoundingClientRect().top - rc.top - B.scroll.scrollTop + ROW / 2;
    const [f, l] = visibleRange(A), [bf, bl] = visibleRange(B);
    const seen = new Set();
    for (let r = f; r < l; r++) {
      const v = A.rows[r];
      const nodes = v >= 0 ? [v] : A.groups[-v - 1].members.slice(0, 1);
      for (const i of nodes) {
        const p = A.pairOf[i];
        if (p < 0) continue;
        const q = pairs[p];
        for (const b of q.b) {
          const br = shownRow(B, b);
          if (br < bf || br >= bl) continue;
          const key = r + ':' + br;
          if (seen.has(key)) continue;
          seen.add(key);
          const hot = hover && hover.pair === p;
          g.strokeStyle = BANDCOL[q.kind === 'm' ? 'm' : q.band] || '#7a7a7a';
          g.lineWidth = hot ? 3 : 1.2;
          g.setLineDash(q.a.length > 1 || q.b.length > 1 || q.kind === 'f' ? [4, 3] : []);
          g.beginPath();
          g.moveTo(0, y0 + r * ROW);
          g.bezierCurveTo(rc.width / 2, y0 + r * ROW, rc.width / 2, y1 + br * ROW, rc.width, y1 + br * ROW);
          g.stroke();
        }
      }
    }
  }

  // ---- navigation --------------------------------------------------------
  // reveal opens the path to module i, scrolls to it and selects it; the
  // partner on the other side is opened too, so the two stay side by side.
  function reveal(T, i, noSelect) {
    if (i < 0) return;
    if (!noSelect) for (const x of partners(T, i)) reveal(other(T), x, true);
    for (let x = i; x >= 0; x = T.parent[x]) {
      if (x !== i) T.exp[x] = 1;
      if (T.group[x] >= 0) T.gexp[T.group[x]] = 1;
    }
    build(T);
    const r = T.rowOf[i];
    T.scroll.scrollTop = Math.max(0, r * ROW - T.scroll.clientHeight / 2);
    if (!noSelect) select(T, i);
    render(T); gutter();
    const el = T.layer.querySelector('[data-r="' + r + '"]');
    if (el) { el.classList.add('flash'); }
  }
  function toggle(T, r) {
    const v = T.rows[r];
    if (v < 0) T.gexp[-v - 1] ^= 1; else if (T.kids[v]) T.exp[v] ^= 1;
    build(T); redraw();
  }
  function select(T, i) {
    A.sel = B.sel = -1;
    T.sel = i;
    details(T, i);
    redraw();
  }
  function go(T, i) { return '<a class="go" data-side="' + T.k + '" data-node="' + i + '">' + esc(path(T, i) || '(model)') + '</a>'; }

  for (const T of SIDES) {
    T.scroll.addEventListener('scroll', redraw, { passive: true });
    T.scroll.addEventListener('click', (ev) => {
      const el = ev.target.closest('.row');
      if (!el) return;
      const r = +el.dataset.r, v = T.rows[r];
      if (v < 0 || ev.target.classList.contains('tw')) { toggle(T, r); return; }
      select(T, v);
    });
    T.scroll.addEventListener('dblclick', (ev) => {
      const el = ev.target.closest('.row');
      if (el && T.rows[+el.dataset.r] >= 0) toggle(T, +el.dataset.r);
    });
    T.scroll.addEventListener('mouseover', (ev) => {
      const el = ev.target.closest('.row');
      if (!el) return;
      const v = T.rows[+el.dataset.r];
      const i = v >= 0 ? v : T.groups[-v - 1].first;
      const p = T.pairOf[i];
      if (p < 0) { if (hover) { hover = null; redraw(); } return; }
      if (hover && hover.pair === p) return;
      hover = { pair: p, rows: [new Set(pairs[p].a), new Set(pairs[p].b)] };
      redraw();
    });
    T.scroll.addEventListener('mouseleave', () => { hover = null; redraw(); });
  }
  document.addEventListener('click', (ev) => {
    const a = ev.target.closest('a.go');
    if (a) { ev.preventDefault(); reveal(SIDES[+a.dataset.side], +a.dataset.node); return; }
    const b = ev.target.closest('button[data-act]');
    if (b) act(b.dataset.act, b);
  });
  window.addEventListener('resize', redraw);

  // ---- details of the selected module ---------------------------------------
  // The table's rows come after this script, so that the trees paint
  // before the browser has read them: read once the page is parsed.
  let TAB;
  function tab() {
    if (TAB === undefined) {
      const el = document.getElementById('tab');
      if (!el || document.readyState === 'loading') return null;
      TAB = JSON.parse(el.textContent);
    }
    return TAB;
  }
  let tabIndex = null;
  function tabRows(i) {
    if (!tab()) return [];
    if (!tabIndex) {
      tabIndex = new Map();
      for (const row of tab().rows) {
        if (!tabIndex.has(row[0])) tabIndex.set(row[0], []);
        tabIndex.get(row[0]).push(row);
      }
    }
    return tabIndex.get(i) || [];
  }
  let tabCut = null;
  // cutNote says how many of the modules' rows the page left out.
  function cutNote(nodes, shown) {
    if (!tabCut) {
      tabCut = new Map();
      const c = tab().cut || [];
      for (let j = 0; j < c.length; j += 2) tabCut.set(c[j], c[j + 1]);
    }
    let total = 0, cut = false;
    for (const i of nodes) {
      if (tabCut.has(i)) { total += tabCut.get(i); cut = true; } else total += tabRows(i).length;
    }
    if (!cut) return '';
    return '<p class="cut">' + shown + ' of ' + total + ' rows shown: the page keeps warning and error rows and the first rows of each module; ' +
      esc(D.tabinfo.file || 'the comparison table') + ' has them all.</p>';
  }
  function rowsTable(nodes) {
    const rows = [].concat(...nodes.map(tabRows));
    const cut = cutNote(nodes, rows.length);
    if (!rows.length) return cut || '<p class="hint">No table rows for this module.</p>';
    const H = tab().hdr;
    let h = cut + '<div class="rows"><table><tr>' + H.map((c) => '<th>' + esc(c) + '</th>').join('') + '</tr>';
    for (const row of rows) {
      const fl = row[1], cells = row.slice(2).map((c) => (typeof c === 'number' ? tab().s[c] : c));
      h += '<tr class="' + (fl & 4 ? 'api ' : '') + (fl & 3 ? 'r-' + 'pwe'[(fl & 3) - 1] : '') + '">' + cells.map((c) => '<td>' + esc(c) + '</td>').join('') + '</tr>';
    }
    return h + '</table></div>';
  }
  function details(T, i) {
    const O = other(T), p = T.pairOf[i];
    let h = '<table><tr><th>side</th><td>' + esc(T.label) + '</td></tr>' +
      '<tr><th>path</th><td class="path">' + esc(path(T, i) || '(model)') + '</td></tr>' +
      '<tr><th>class</th><td>' + esc(S[T.cls[i]] || '?') + '</td></tr>';
    if (T.res[i] !== ' ') h += '<tr><th>result</th><td>' + RESNAME[RES[T.res[i]]] + '</td></tr>';
    if (p >= 0) {
      const q = pairs[p], mine = T === A ? q.a : q.b, theirs = T === A ? q.b : q.a;
      h += '<tr><th>partner</th><td class="path">' + theirs.map((x) => go(O, x)).join('<br>') + '</td></tr>';
      if (mine.length > 1) h += '<tr><th>fused with</th><td class="path">' + mine.filter((x) => x !== i).map((x) => go(T, x)).join('<br>') + '</td></tr>';
      h += '<tr><th>kind</th><td>' + esc(KIND[q.kind] || q.kind) + (q.sidecar ? ' (sidecar pair)' : '') + '</td></tr>';
      if (q.band !== '-') h += '<tr><th>confidence</th><td><span class="bd b-' + q.band + '">' + BAND[q.band] + '</span> score ' + (q.sc / 100).toFixed(2) + ', margin ' + (q.mg / 100).toFixed(2) + '</td></tr>';
      if (q.rs) h += '<tr><th>reasons</th><td>' + esc(q.rs.replace(/,/g, ', ')) + '</td></tr>';
      if (q.note) h += '<tr><th>note</th><td>' + esc(q.note) + '</td></tr>';
      if (q.kind !== 'm' && q.kind !== 'r') h += '<tr><th>proven</th><td>' + (q.pv ? 'yes: msprobe\'s resolver pairs them with the mapping' : 'no') + '</td></tr>';
    } else if (i !== 0) {
      h += '<tr><th>partner</th><td>none (unmatched)</td></tr>';
      if (T.why.has(i)) h += '<tr><th>why</th><td>' + esc(T.why.get(i)) + '</td></tr>';
    }
    if (T === A && i !== 0) {
      const r = res[i];
      h += '<tr><th>msprobe</th><td class="path">' + (r >= 0 ? 'resolves to ' + go(B, r) : 'resolves to no bench module') + '</td></tr>';
    }
    h += '</table>';
    if (p < 0 && i !== 0) h += '<button data-act="pick" data-side="' + T.k + '" data-node="' + i + '">Pick for a manual match</button>';
    if (D.tabinfo) {
      const nodes = T === A ? [i] : partners(T, i);
      h += '<h4>Compare rows' + (T === B ? ' (of its NPU partner)' : '') + '</h4>' +
        (tab() ? rowsTable(nodes) : '<p class="hint">The table rows are still loading; select the module again in a moment.</p>');
    }
    $('details').innerHTML = h;
    $('detbox').open = true;
  }

  // ---- summary -----------------------------------------------------------------
  function summary() {
    let h = '<table>';
    for (const [l, v] of D.sum.facts) h += '<tr><th>' + esc(l) + '</th><td>' + esc(v) + '</td></tr>';
    const bands = { s: 0, c: 0, u: 0 }, kinds = {};
    for (const q of pairs) { if (bands[q.band] !== undefined) bands[q.band]++; kinds[q.kind] = (kinds[q.kind] || 0) + 1; }
    for (const T of SIDES) {
      let first = -1;
      for (let i = 1; i < T.n && first < 0; i++) if (T.pairOf[i] < 0) first = i;
      const c = counts(T);
      h += '<tr><th>' + esc(T.label) + '</th><td>' + c.n + ' modules' + (c.dumps ? ' msprobe dumps' : '') + ', ' + c.paired + ' paired, ' + (c.n - c.paired) + ' unmatched' +
        (c.parts ? ' (' + c.parts + ' of them N:1 parts compared through their group)' : '') +
        (first > 0 ? ' <button data-act="nextun" data-side="' + T.k + '">next unmatched</button>' : '') + '</td></tr>';
    }
    const cnt = D.sum.cnt;
    h += '<tr><th>pairs</th><td>' + (cnt ? cnt[6] + pairs.length - P0 : pairs.length) +
      (cnt && cnt[7] ? ' (' + cnt[7] + ' of them pairs of containers msprobe never dumps)' : '') +
      (bands.s + bands.c + bands.u ? ': ' + bands.s + ' sure, ' + bands.c + ' check, ' + bands.u + ' unsure' : '') +
      (kinds.f ? ', ' + kinds.f + ' fused N:1' : '') + (kinds.e ? ', ' + kinds.e + ' experts' : '') + (kinds.a ? ', ' + kinds.a + ' absorbed' : '') + '</td></tr></table>';
    const f = D.sum.first;
    if (f) {
      h += '<div class="divbox" id="firstdiv"><b>First divergence</b><br>' +
        (f.a >= 0 ? 'NPU: ' + go(A, f.a) + '<br>' : '') + (f.b >= 0 ? 'bench: ' + go(B, f.b) + '<br>' : '') +
        '<span class="path">' + esc(f.ae) + (f.be ? ' vs ' + esc(f.be) : '') + '</span><br>' +
        (f.row ? 'row <span class="path">' + esc(f.row) + '</span><br>' : '') + f.msg.map(esc).join('<br>') + '</div>';
    } else if (D.mode === 'compare') {
      h += '<p>No divergence: no entry whose inputs agree and outputs do not.</p>';
    }
    if (D.conf.length) {
      h += '<h4>Conflicts (' + D.conf.length + ')</h4>';
      for (const c of D.conf) {
        h += '<div><b>' + esc(c.class) + '</b>' + (c.rev ? ' (reverse draft)' : '') + ': ' + (c.pv ? 'proven by the resolver' : '<b>not proven</b>') + '<ul>';
        for (const [p, w] of c.inst) {
          const T = c.rev ? B : A, i = lookup(T, p.replace(/\{(\d+)-\d+\}/g, '$1'));
          h += '<li><span class="path">' + (i >= 0 ? go(T, i) : esc(p)) + '</span> wants {' + esc(w) + '}</li>';
        }
        h += '</ul>' + esc(c.res) + '</div>';
      }
    }
    if (D.tabinfo && D.tabinfo.note) h += '<p class="cut" id="tabnote">' + esc(D.tabinfo.note) + '</p>';
    if (D.sum.notes.length) h += '<h4>Notes</h4><ul>' + D.sum.notes.map((n) => '<li>' + esc(n) + '</li>').join('') + '</ul>';
    $('summary').innerHTML = h;
  }
  const nextUn = [0, 0];
  function nextUnmatched(T) {
    for (let k = 0; k < T.n; k++) {
      const i = 1 + ((nextUn[T.k] + k) % (T.n - 1));
      if (T.pairOf[i] < 0) { nextUn[T.k] = i; reveal(T, i); return; }
    }
  }

  // ---- search ------------------------------------------------------------------
  let hits = [], hitAt = -1, searchTimer = 0, lastQ = null;
  function search(q) {
    q = q.trim().toLowerCase();
    lastQ = q;
    hits = []; hitAt = -1;
    if (q.length >= 2) {
      for (const T of SIDES) {
        if (!T.lpaths) { T.lpaths = new Array(T.n); for (let i = 0; i < T.n; i++) T.lpaths[i] = (path(T, i) + ' ' + S[T.cls[i]]).toLowerCase(); }
        for (let i = 1; i < T.n; i++) if (T.lpaths[i].includes(q)) hits.push([T.k, i]);
      }
    }
    $('searchinfo').textContent = q.length >= 2 ? hits.length + ' match' + (hits.length === 1 ? '' : 'es') : '';
    let h = '<ul class="res">';
    for (const [k, i] of hits.slice(0, 200)) h += '<li>' + (k ? 'bench ' : 'NPU ') + go(SIDES[k], i) + '</li>';
    if (hits.length > 200) h += '<li class="hint">… ' + (hits.length - 200) + ' more (Enter steps through all)</li>';
    $('results').innerHTML = h + '</ul>';
    $('resbox').open = hits.length > 0;
  }
  $('search').addEventListener('input', (ev) => { clearTimeout(searchTimer); searchTimer = setTimeout(() => search(ev.target.value), 150); });
  $('search').addEventListener('keydown', (ev) => {
    if (ev.key !== 'Enter') return;
    clearTimeout(searchTimer);
    if (hitAt < 0 || ev.target.value.trim().toLowerCase() !== lastQ) search(ev.target.value);
    if (!hits.length) return;
    hitAt = (hitAt + 1) % hits.length;
    $('searchinfo').textContent = (hitAt + 1) + ' of ' + hits.length;
    reveal(SIDES[hits[hitAt][0]], hits[hitAt][1]);
  });

  // ---- manual matching ---------------------------------------------------------
  // A manual pair becomes one layer_mapping line where a class rule is
  // sound, a sidecar pair where it is not; infer.Manual does the same on
  // the Go side, where msprobe's resolver checks each line.
  const generic = new Set(D.generic.map((i) => S[i]));
  const taken = new Set((D.map ? D.map.rules : []).map(([c, k]) => c + '\u0000' + k));
  let byClass = null;
  function instances(c) {
    if (!byClass) { byClass = new Map(); for (let i = 1; i < A.n; i++) { const k = S[A.cls[i]]; if (!byClass.has(k)) byClass.set(k, []); byClass.get(k).push(i); } }
    return byClass.get(c) || [];
  }
  function sound(c, p, key, val) {
    const ext = [];
    if (c === 'TopLayer') return ext;
    for (const x of instances(c)) {
      if (x === p) continue;
      const k = lookupRel(A, x, key);
      if (k < 0) continue;
      const y = res[x];
      if (y < 0) continue;
      const t = lookupRel(B, y, val), r = res[k];
      if (r === t) continue;
      if (r < 0 && (t < 0 || resBy[t] === 0)) { if (t >= 0) ext.push([k, t]); continue; }
      return null;
    }
    return ext;
  }
  function plan(a, b) {
    if (res[a] === b) return { how: 'covered' };
    for (let p = A.parent[a]; p >= 0; p = A.parent[p]) {
      const q = p === 0 ? 0 : res[p];
      if (q < 0 || !isAnc(B, q, b)) continue;
      const c = p === 0 ? 'TopLayer' : S[A.cls[p]];
      if (p !== 0 && (c === '' || generic.has(c))) continue;
      const key = rel(A, p, a), val = rel(B, q, b);
      if (taken.has(c + '\u0000' + key)) continue;
      const ext = sound(c, p, key, val);
      if (ext) return { how: 'line', cls: c, key, val, ext };
    }
    return { how: 'sidecar' };
  }
  function setRes(a, b) {
    // a's subtree now resolves under b by name
    for (let d = a; d < A.end[a]; d++) {
      const t = d === a ? b : lookupRel(B, b, rel(A, a, d));
      if (res[d] >= 0) resBy[res[d]]--;
      res[d] = t;
      if (t >= 0) resBy[t]++;
    }
  }
  function unpairedKids(T, i) { return children(T, i).filter((c) => T.pairOf[c] < 0); }
  function childPairs(a, b, out) {
    const ca = unpairedKids(A, a), cb = unpairedKids(B, b), used = new Set(), got = [];
    for (const x of ca) {
      const y = cb.find((y) => !used.has(y) && S[B.name[y]] === S[A.name[x]]);
      if (y !== undefined) { used.add(y); got.push([x, y]); }
    }
    const left = ca.filter((x) => !got.some((g) => g[0] === x)), right = cb.filter((y) => !used.has(y));
    for (const x of left) {
      const sameA = left.filter((z) => A.cls[z] === A.cls[x]);
      const sameB = right.filter((y) => S[B.cls[y]] === S[A.cls[x]]);
      if (sameA.length === 1 && sameB.length === 1) got.push([x, sameB[0]]);
    }
    got.sort((u, v) => u[0] - v[0]);
    for (const [x, y] of got) { out.push([x, y]); childPairs(x, y, out); }
  }
  const manual = []; // {a, b, how, cls, key, val, ext}
  function addPair(a, b, sidecar) {
    const q = { a: [a], b: [b], band: '-', kind: 'm', sc: 100, mg: 0, rs: 'manual', pv: !sidecar, note: '', sidecar };
    pairs.push(q);
    linkPair(q, pairs.length - 1);
  }
  function matchPicked(withChildren) {
    const [a, b] = pick;
    if (a < 0 || b < 0) return;
    const todo = [[a, b]];
    if (withChildren) childPairs(a, b, todo);
    for (const [x, y] of todo) {
      if (A.pairOf[x] >= 0 || B.pairOf[y] >= 0) continue;
      const pl = plan(x, y);
      const m = Object.assign({ a: x, b: y }, pl);
      manual.push(m);
      if (pl.how === 'line') {
        taken.add(pl.cls + '\u0000' + pl.key);
        setRes(x, y);
        for (const [k, t] of pl.ext) { setRes(k, t); if (A.pairOf[k] < 0 && B.pairOf[t] < 0) addPair(k, t, false); }
      }
      addPair(x, y, pl.how === 'sidecar');
    }
    pick = [-1, -1];
    head(A); head(B); summary(); manualPanel(); redraw();
    if (A.sel >= 0) details(A, A.sel); else if (B.sel >= 0) details(B, B.sel);
  }
  const YAML11 = new Set(['y', 'n', 'yes', 'no', 'on', 'off', 'true', 'false', 'null', '~']);
  const q = (s) => (/^[A-Za-z_][A-Za-z0-9_./-]*$/.test(s) && !YAML11.has(s.toLowerCase()) ? s : JSON.stringify(s));
  const COMMENT = '  # manual match (layermap view)';
  function lineGroups() {
    const g = new Map();
    for (const m of manual) if (m.how === 'line') { if (!g.has(m.cls)) g.set(m.cls, []); g.get(m.cls).push(m); }
    return g;
  }
  function manualLines() {
    const ind = ' '.repeat(D.map ? D.map.indent : 2);
    let t = '';
    for (const [c, ms] of lineGroups()) {
      const has = D.map && D.map.blocks.some((b) => b[0] === c);
      t += q(c) + ':' + (has ? '  # add under the existing block' : '') + '\n' + ms.map((m) => ind + q(m.key) + ': ' + q(m.val) + COMMENT).join('\n') + '\n';
    }
    return t;
  }
  function pairsYAML(ms) {
    return ms.map((m) => '- npu: ' + q(path(A, m.a)) + '\n  bench: ' + q(path(B, m.b)) + '\n').join('');
  }
  function sidecarYAML() { return pairsYAML(manual.filter((m) => m.how === 'sidecar')); }
  function manualPairsYAML() {
    return '# Manual matches made in the layermap view.\n# Read by: layermap suggest NPU BENCH --pairs-in FILE\n' + (pairsYAML(manual) || '[]\n');
  }
  function mergedMapping() {
    const ind = ' '.repeat(D.map ? D.map.indent : 2);
    const groups = lineGroups();
    let lines = D.map ? D.map.text.replace(/\n$/, '').split('\n') : [];
    const edits = [], fresh = [];
    for (const [c, ms] of groups) {
      const body = ms.map((m) => ind + q(m.key) + ': ' + q(m.val) + COMMENT);
      const b = D.map && D.map.blocks.find((x) => x[0] === c);
      if (b) edits.push([b[1], b[2], c, body]); else fresh.push(q(c) + ':', ...body, '');
    }
    edits.sort((x, y) => y[0] - x[0]);
    for (const [l, inline, c, body] of edits) {
      if (inline) lines.splice(l - 1, 1, q(c) + ':', ...body);
      else lines.splice(l, 0, ...body);
    }
    if (fresh.length) {
      if (D.map && D.map.empty > 0 && !edits.length) lines.splice(D.map.empty - 1, 1);
      if (lines.length && lines[lines.length - 1].trim() !== '') lines.push('');
      lines = lines.concat(fresh.slice(0, -1));
    }
    return lines.join('\n') + '\n';
  }
  function manualPanel() {
    const pa = pick[0], pb = pick[1];
    let h = '<p class="hint">Pick an unmatched module on each side (select it, then "Pick for a manual match"), then match them. The page offers the layer_mapping lines where a class rule is sound, sidecar pairs where it is not.</p>' +
      '<table><tr><th>NPU</th><td class="path">' + (pa >= 0 ? go(A, pa) : '—') + '</td></tr><tr><th>bench</th><td class="path">' + (pb >= 0 ? go(B, pb) : '—') + '</td></tr></table>' +
      '<label><input type="checkbox" id="kids" checked> match the children too</label><br>' +
      '<button class="primary" data-act="match"' + (pa >= 0 && pb >= 0 ? '' : ' disabled') + '>Match</button>' +
      '<button data-act="clearpick">Clear</button>';
    if (manual.length) {
      const nl = manual.filter((m) => m.how === 'line').length, ns = manual.filter((m) => m.how === 'sidecar').length;
      h += '<h4>' + manual.length + ' manual pair' + (manual.length > 1 ? 's' : '') + ': ' + nl + ' layer_mapping line' + (nl === 1 ? '' : 's') + ', ' + ns + ' sidecar, ' + (manual.length - nl - ns) + ' covered</h4><ul class="res">';
      for (const m of manual) h += '<li class="path">' + esc(path(A, m.a)) + ' → ' + esc(path(B, m.b)) + ': ' + (m.how === 'line' ? esc(m.cls + ': ' + m.key + ': ' + m.val) + (m.ext.length ? ' (also pairs ' + m.ext.length + ' more instance' + (m.ext.length > 1 ? 's' : '') + ')' : '') : m.how) + '</li>';
      h += '</ul>';
      const lines = manualLines(), side = sidecarYAML();
      h += '<h4>layer_mapping lines to add</h4><textarea id="outyaml" readonly>' + esc(lines || '# none\n') + '</textarea>' +
        '<button data-act="copy" data-what="outyaml">Copy</button><button data-act="dlmap">Download ' + esc(D.map ? D.map.name : 'layer_mapping.yaml') + ' with them</button>';
      if (side) h += '<h4>Sidecar pairs to add (layermap compare --pairs FILE)</h4><textarea id="outpairs" readonly>' + esc(side) + '</textarea>' +
        '<button data-act="copy" data-what="outpairs">Copy</button><button data-act="dlpairs">Download pairs.yaml</button>';
      h += '<p><button data-act="dlmanual">Download manual_pairs.yaml</button> for <code>layermap suggest NPU BENCH --pairs-in manual_pairs.yaml</code>, which checks every line with msprobe\'s resolver.</p>';
    }
    $('manual').innerHTML = h;
  }
  function download(name, text) {
    const a = document.createElement('a');
    a.href = URL.createObjectURL(new Blob([text], { type: 'text/yaml' }));
    a.download = name;
    document.body.appendChild(a);
    a.click();
    setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
  }
  function act(what, el) {
    switch (what) {
      case 'pick': {
        const k = +el.dataset.side;
        pick[k] = +el.dataset.node;
        manualPanel(); redraw();
        $('manbox').open = true;
        break;
      }
      case 'clearpick': pick = [-1, -1]; manualPanel(); redraw(); break;
      case 'match': matchPicked($('kids').checked); break;
      case 'nextun': nextUnmatched(SIDES[+el.dataset.side]); break;
      case 'copy': {
        const ta = $(el.dataset.what);
        const fallback = () => { ta.select(); document.execCommand('copy'); };
        if (navigator.clipboard) navigator.clipboard.writeText(ta.value).catch(fallback); else fallback();
        break;
      }
      case 'dlmap': download(D.map ? D.map.name : 'layer_mapping.yaml', mergedMapping()); break;
      case 'dlpairs': download('pairs.yaml', sidecarYAML()); break;
      case 'dlmanual': download('manual_pairs.yaml', manualPairsYAML()); break;
    }
  }

  // ---- start ---------------------------------------------------------------------
  $('title').textContent = D.title;
  $('legend').innerHTML = D.mode === 'compare'
    ? '<span><span class="sw" style="background:var(--pass)"></span>pass</span><span><span class="sw" style="background:var(--warning)"></span>warning</span><span><span class="sw" style="background:var(--error)"></span>error</span><span><span class="sw" style="background:var(--unmatched)"></span>unmatched</span>'
    : '<span class="bd b-s">sure</span><span class="bd b-c">check</span><span class="bd b-u">unsure</span><span class="bd b-f">fused N:1</span><span><span class="sw" style="background:var(--unmatched)"></span>unmatched</span>';
  for (const T of SIDES) { initialExpand(T); build(T); head(T); }
  summary();
  manualPanel();
  render(A); render(B); gutter();
  performance.mark('lm-ready');
  // after the frame that shows the trees
  requestAnimationFrame(() => setTimeout(() => performance.mark('lm-painted'), 0));
  // for tests and scripting: what the page offers
  window.layermapView = { manualLines, mergedMapping, sidecarYAML, manualPairsYAML, lookup: (k, p) => lookup(SIDES[k], p), reveal: (k, i) => reveal(SIDES[k], i), pick: (k, i) => { pick[k] = i; manualPanel(); }, match: matchPicked, manual: () => manual.map((m) => ({ npu: path(A, m.a), bench: path(B, m.b), how: m.how, line: m.how === 'line' ? m.cls + ': ' + m.key + ': ' + m.val : '' })) };
})();
