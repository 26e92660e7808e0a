package dumpgen

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// ScaleOptions shape a dump scaled from a real one (see Scale).
type ScaleOptions struct {
	// Seed fixes the random factors applied to floating-point statistics.
	Seed uint64
	// Layers is the number of layers written for every stack of layers
	// the template holds (".layers.N." or ".blocks.N." module paths); 0
	// keeps the template's count.
	Layers int
	// Passes is the least number of forward passes written (default 1);
	// more are added until dump.json reaches TargetBytes. Every pass calls
	// each module once more (forward.0, forward.1, ...) and continues the
	// API call indices, as msprobe numbers repeated calls.
	Passes      int
	TargetBytes int64
}

// Scale writes, into outDir, a dump.json (and the stack.json and
// construct.json, when the template has them) scaled from the msprobe dump
// folder templateDir: its layer stacks repeated to Layers layers and its
// entries repeated for Passes forward passes, names renumbered as msprobe
// names repeated modules and API calls, floating-point statistics scaled
// by random factors. Entry bodies, entry order, the stack groups and the
// construct parents are the template's, so a real model's dump pair (say
// Qwen2.5-VL from two frameworks) grows into a realistic large pair.
func Scale(templateDir, outDir string, o ScaleOptions) (Stats, error) {
	tmpl, err := readTemplate(templateDir)
	if err != nil {
		return Stats{}, err
	}
	if o.Passes <= 0 {
		o.Passes = 1
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return Stats{}, err
	}
	plan := tmpl.plan(o.Layers)
	f, err := os.Create(filepath.Join(outDir, "dump.json"))
	if err != nil {
		return Stats{}, err
	}
	defer f.Close()
	cw := &countWriter{w: f}
	s := &scaler{t: tmpl, e: emitter{w: bufio.NewWriterSize(cw, 1<<16)},
		rng: rand.New(rand.NewPCG(o.Seed, 0x51ed2701)), idx: map[idxKey]int{}, next: map[string]int{}, once: map[string]bool{}}
	e := &s.e
	e.beginObj()
	for _, kv := range tmpl.header {
		e.key(kv.key)
		s.value(kv.val)
	}
	e.key("data")
	e.beginObj()
	var st Stats
	for pass := 0; pass < o.Passes || o.TargetBytes > 0 && cw.n+int64(e.w.Buffered()) < o.TargetBytes; pass++ {
		for _, p := range plan {
			if s.entry(pass, p) {
				st.Entries++
			}
		}
		if e.err != nil {
			break
		}
	}
	e.end()
	e.end()
	e.w.WriteByte('\n')
	if err := e.w.Flush(); err != nil {
		return st, err
	}
	st.Bytes = cw.n
	if err := f.Close(); err != nil {
		return st, err
	}
	if tmpl.stack != nil {
		if err := s.writeStack(filepath.Join(outDir, "stack.json")); err != nil {
			return st, err
		}
	}
	if tmpl.construct != nil {
		if err := s.writeConstruct(filepath.Join(outDir, "construct.json")); err != nil {
			return st, err
		}
	}
	return st, nil
}

// jv is a JSON value with its member order and number literals kept.
type jv struct {
	kind byte // 'n' null, 't'/'f' bools, '#' number, 's' string, '[' list, '{' object, 'w' bare word (NaN, Infinity)
	text string
	keys []string
	vals []*jv
}

type jparser struct {
	b   []byte
	pos int
}

func (p *jparser) ws() {
	for p.pos < len(p.b) && (p.b[p.pos] == ' ' || p.b[p.pos] == '\n' || p.b[p.pos] == '\t' || p.b[p.pos] == '\r') {
		p.pos++
	}
}

func (p *jparser) value() (*jv, error) {
	p.ws()
	if p.pos >= len(p.b) {
		return nil, io.ErrUnexpectedEOF
	}
	switch c := p.b[p.pos]; {
	case c == '{' || c == '[':
		v := &jv{kind: c}
		p.pos++
		p.ws()
		if p.pos < len(p.b) && (p.b[p.pos] == '}' || p.b[p.pos] == ']') {
			p.pos++
			return v, nil
		}
		for {
			if c == '{' {
				k, err := p.value()
				if err != nil {
					return nil, err
				}
				p.ws()
				if k.kind != 's' || p.pos >= len(p.b) || p.b[p.pos] != ':' {
					return nil, fmt.Errorf("offset %d: expected a key and ':'", p.pos)
				}
				p.pos++
				v.keys = append(v.keys, k.text)
			}
			x, err := p.value()
			if err != nil {
				return nil, err
			}
			v.vals = append(v.vals, x)
			p.ws()
			if p.pos >= len(p.b) {
				return nil, io.ErrUnexpectedEOF
			}
			p.pos++
			switch p.b[p.pos-1] {
			case ',':
			case '}', ']':
				return v, nil
			default:
				return nil, fmt.Errorf("offset %d: expected ',' or a closing bracket", p.pos-1)
			}
		}
	case c == '"':
		end := p.pos + 1
		for end < len(p.b) && p.b[end] != '"' {
			if p.b[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(p.b) {
			return nil, io.ErrUnexpectedEOF
		}
		s, err := strconv.Unquote(string(p.b[p.pos : end+1]))
		if err != nil {
			return nil, fmt.Errorf("offset %d: %v", p.pos, err)
		}
		p.pos = end + 1
		return &jv{kind: 's', text: s}, nil
	default:
		end := p.pos
		for end < len(p.b) && !strings.ContainsRune(",]} \n\t\r", rune(p.b[end])) {
			end++
		}
		w := string(p.b[p.pos:end])
		p.pos = end
		switch w {
		case "null":
			return &jv{kind: 'n'}, nil
		case "true":
			return &jv{kind: 't'}, nil
		case "false":
			return &jv{kind: 'f'}, nil
		case "NaN", "Infinity", "-Infinity":
			return &jv{kind: 'w', text: w}, nil
		}
		if _, err := strconv.ParseFloat(w, 64); err != nil {
			return nil, fmt.Errorf("offset %d: bad literal %q", p.pos, w)
		}
		return &jv{kind: '#', text: w}, nil
	}
}

func readJSON(path string) (*jv, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p := &jparser{b: b}
	v, err := p.value()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

type member struct {
	key string
	val *jv
}

// template is a parsed template dump folder.
type template struct {
	header    []member // top-level members except "data"
	entries   []member
	stack     *jv               // stack.json, nil when absent
	stackOf   map[string]int    // grouped stack.json: entry -> group
	construct map[string]string // entry -> parent ("" for null)
	hasParent map[string]bool
}

func readTemplate(dir string) (*template, error) {
	d, err := readJSON(filepath.Join(dir, "dump.json"))
	if err != nil {
		return nil, err
	}
	if d.kind != '{' {
		return nil, errors.New("template dump.json: expected an object")
	}
	t := &template{}
	for i, k := range d.keys {
		if k != "data" {
			t.header = append(t.header, member{k, d.vals[i]})
			continue
		}
		for j, name := range d.vals[i].keys {
			t.entries = append(t.entries, member{name, d.vals[i].vals[j]})
		}
	}
	if st, err := readJSON(filepath.Join(dir, "stack.json")); err == nil {
		t.stack = st
		t.stackOf = map[string]int{}
		if len(st.keys) > 0 && st.keys[0] == "0" {
			for g, grp := range st.vals {
				if grp.kind == '[' && len(grp.vals) == 2 {
					for _, n := range grp.vals[0].vals {
						t.stackOf[n.text] = g
					}
				}
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if c, err := readJSON(filepath.Join(dir, "construct.json")); err == nil {
		t.construct, t.hasParent = map[string]string{}, map[string]bool{}
		for i, k := range c.keys {
			t.hasParent[k] = true
			if c.vals[i].kind == 's' {
				t.construct[k] = c.vals[i].text
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return t, nil
}

// layerRe finds a layer index in a module path.
var layerRe = regexp.MustCompile(`\.(?:layers|blocks)\.(\d+)\.`)

// layerOf returns the layer stack (the path up to the index) and index
// of a module entry name, or "" when it is in no stack.
func layerOf(name string) (string, int) {
	if !strings.HasPrefix(name, "Module.") && !strings.HasPrefix(name, "Cell.") {
		return "", 0
	}
	m := layerRe.FindStringSubmatchIndex(name)
	if m == nil {
		return "", 0
	}
	n, _ := strconv.Atoi(name[m[2]:m[3]])
	return name[:m[2]], n
}

// step is one entry of a pass: a template entry and the layer it is
// written for.
type step struct {
	entry    int
	stack    string // layer stack renumbered, "" for none
	from, to int    // template layer -> written layer
	instance int    // layer instance (-1 outside stacks), for call indices
}

// plan lays out one forward pass: template entries in order, each layer
// stack expanded to layers layers (template layer min(i, last) for layer i).
func (t *template) plan(layers int) []step {
	n := len(t.entries)
	stackOf := make([]string, n)
	layerAt := make([]int, n)
	for i, e := range t.entries {
		stackOf[i], layerAt[i] = t.layerOfEntry(e.key)
	}
	// Each stack's region: first to last entry in it.
	type region struct {
		first, last, layers int
	}
	regions := map[string]*region{}
	var order []string
	for i, s := range stackOf {
		if s == "" {
			continue
		}
		r := regions[s]
		if r == nil {
			r = &region{first: i}
			regions[s] = r
			order = append(order, s)
		}
		r.last = i
		r.layers = max(r.layers, layerAt[i]+1)
	}
	var out []step
	i := 0
	for i < n {
		var r *region
		var name string
		for _, s := range order {
			if regions[s].first == i {
				r, name = regions[s], s
			}
		}
		if r == nil || layers <= 0 {
			out = append(out, step{entry: i, instance: -1})
			i++
			continue
		}
		// Entries of the region without a layer of this stack go with the
		// layer before them.
		cur := 0
		byLayer := make([][]int, r.layers)
		for j := r.first; j <= r.last; j++ {
			if stackOf[j] == name {
				cur = layerAt[j]
			}
			byLayer[cur] = append(byLayer[cur], j)
		}
		for l := 0; l < layers; l++ {
			from := min(l, r.layers-1)
			for _, j := range byLayer[from] {
				out = append(out, step{entry: j, stack: name, from: from, to: l, instance: l})
			}
		}
		i = r.last + 1
	}
	return out
}

// layerOfEntry places an entry in a layer: modules by their path, APIs
// by their construct.json parent.
func (t *template) layerOfEntry(name string) (string, int) {
	for k := 0; k < 64 && name != ""; k++ {
		if s, l := layerOf(name); s != "" {
			return s, l
		}
		name = t.construct[name]
	}
	return "", 0
}

type idxKey struct {
	op       string
	idx      int
	pass     int
	instance int
}

type scaler struct {
	t       *template
	e       emitter
	rng     *rand.Rand
	idx     map[idxKey]int // template call -> written call index
	next    map[string]int // next call index per op
	written []writtenEntry
	once    map[string]bool // names with no call index, written
}

type writtenEntry struct {
	name, parent string
	hasParent    bool
	group        int
	tmpl         int
}

// splitCall splits an entry name into its op, call index and the rest:
// "Tensor.add.3.forward" -> "Tensor.add", 3, "forward" (API) and
// "Module.fc.Linear.forward.0" -> "Module.fc.Linear.forward", 0, "" (module).
func splitCall(name string) (op string, idx int, dir string, ok bool) {
	i := strings.LastIndexByte(name, '.')
	if i < 0 {
		return "", 0, "", false
	}
	if n, err := strconv.Atoi(name[i+1:]); err == nil {
		return name[:i], n, "", true
	}
	j := strings.LastIndexByte(name[:i], '.')
	if j < 0 {
		return "", 0, "", false
	}
	n, err := strconv.Atoi(name[j+1 : i])
	if err != nil {
		return "", 0, "", false
	}
	return name[:j], n, name[i+1:], true
}

// rename gives a template entry (or parent) name its name in the pass.
func (s *scaler) rename(name string, pass int, st step) (string, bool) {
	instance := -1
	if st.stack != "" && strings.HasPrefix(name, st.stack) {
		rest := name[len(st.stack):]
		if d := strings.IndexByte(rest, '.'); d > 0 && rest[:d] == strconv.Itoa(st.from) {
			name = st.stack + strconv.Itoa(st.to) + rest[d:]
			instance = st.instance
		}
	} else if st.stack != "" && !strings.HasPrefix(name, "Module.") && !strings.HasPrefix(name, "Cell.") {
		instance = st.instance
	}
	op, idx, dir, ok := splitCall(name)
	if !ok {
		return name, false
	}
	k := idxKey{op + "." + dir, idx, pass, instance}
	n, seen := s.idx[k]
	if !seen {
		n = s.next[k.op]
		s.next[k.op] = n + 1
		s.idx[k] = n
	}
	if dir == "" {
		return op + "." + strconv.Itoa(n), true
	}
	return op + "." + strconv.Itoa(n) + "." + dir, true
}

// entry writes template step st of a pass; false when it is not written:
// a name with no call index to renumber is written once, as a key of
// "data" is (Python's json.load would keep only the last).
func (s *scaler) entry(pass int, st step) bool {
	m := s.t.entries[st.entry]
	name, numbered := s.rename(m.key, pass, st)
	if !numbered {
		if s.once[name] {
			return false
		}
		s.once[name] = true
	}
	w := writtenEntry{name: name, group: -1, tmpl: st.entry}
	if g, ok := s.t.stackOf[m.key]; ok {
		w.group = g
	}
	if s.t.hasParent[m.key] {
		w.hasParent = true
		if p := s.t.construct[m.key]; p != "" {
			w.parent, _ = s.rename(p, pass, st)
		}
	}
	s.written = append(s.written, w)
	s.e.key(name)
	s.value(m.val)
	return true
}

// value writes a template value, floats scaled by a random factor when
// s has a random source.
func (s *scaler) value(v *jv) {
	e := &s.e
	switch v.kind {
	case 'n':
		e.null()
	case 't':
		e.bool(true)
	case 'f':
		e.bool(false)
	case 's':
		e.str(v.text)
	case 'w':
		e.raw(v.text)
	case '#':
		if s.rng != nil && strings.ContainsAny(v.text, ".eE") {
			f, _ := strconv.ParseFloat(v.text, 64)
			e.float(f * (1 + 0.3*s.rng.NormFloat64()))
		} else {
			e.raw(v.text)
		}
	case '[':
		e.beginArr()
		for _, x := range v.vals {
			s.value(x)
		}
		e.end()
	case '{':
		e.beginObj()
		for i, k := range v.keys {
			e.key(k)
			s.value(v.vals[i])
		}
		e.end()
	}
}

func writeFile(path string, fn func(w *scaler)) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := &scaler{e: emitter{w: bufio.NewWriterSize(f, 1<<16)}}
	fn(w)
	w.e.w.WriteByte('\n')
	if err := w.e.w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeStack writes stack.json in the template's format: grouped (names
// added to their template entry's group) or one frame list per entry.
func (s *scaler) writeStack(path string) error {
	st := s.t.stack
	return writeFile(path, func(w *scaler) {
		e := &w.e
		e.beginObj()
		if len(st.keys) > 0 && st.keys[0] == "0" {
			names := make([][]string, len(st.vals))
			for _, x := range s.written {
				if x.group >= 0 {
					names[x.group] = append(names[x.group], x.name)
				}
			}
			for g, grp := range st.vals {
				e.key(st.keys[g])
				if grp.kind != '[' || len(grp.vals) != 2 {
					w.value(grp)
					continue
				}
				e.beginArr()
				e.beginArr()
				for _, n := range names[g] {
					e.str(n)
				}
				e.end()
				w.value(grp.vals[1])
				e.end()
			}
		} else {
			frames := map[string]*jv{}
			for i, k := range st.keys {
				frames[k] = st.vals[i]
			}
			for _, x := range s.written {
				if f, ok := frames[s.t.entries[x.tmpl].key]; ok {
					e.key(x.name)
					w.value(f)
				}
			}
		}
		e.end()
	})
}

// writeConstruct writes construct.json: every written entry with its
// renamed parent.
func (s *scaler) writeConstruct(path string) error {
	return writeFile(path, func(x *scaler) {
		e := &x.e
		e.beginObj()
		for _, w := range s.written {
			if !w.hasParent {
				continue
			}
			e.key(w.name)
			if w.parent == "" {
				e.null()
			} else {
				e.str(w.parent)
			}
		}
		e.end()
	})
}

// readNames lists the "data" keys of a dump.json (tests).
func readNames(b []byte) ([]string, error) {
	p := &jparser{b: b}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	for i, k := range v.keys {
		if k == "data" {
			return v.vals[i].keys, nil
		}
	}
	return nil, errors.New("no data")
}
