package htmlview

import (
	"bufio"
	"cmp"
	"encoding/json"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/layermap/layermap/infer"
	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/printparse"
)

// The page's data, as compact JSON. Each tree is written once, in
// pre-order, as three parallel arrays (name, class, child count) of
// indexes into one string table; a node is referred to by its pre-order
// index, so no path is written out. Pair indexes are delta-coded.
type jsonView struct {
	V       int         `json:"v"`
	Mode    Mode        `json:"mode"`
	Title   string      `json:"title"`
	S       []string    `json:"s"`
	Sides   [2]jsonSide `json:"sides"`
	P       jsonPairs   `json:"p"`
	RX      []int       `json:"rx"`      // npu, bench (-1 none): where msprobe's resolver differs from the 1:1 partner
	Generic []int       `json:"generic"` // classes no rule may key (ModuleList, ...)
	Conf    []jsonConf  `json:"conf"`
	Sum     jsonSum     `json:"sum"`
	Map     *jsonMap    `json:"map,omitempty"`
	// TabInfo says there is a table; the table itself is a second data
	// element after the script, written row by row (writeTable).
	TabInfo *jsonTabInfo `json:"tabinfo,omitempty"`
}

type jsonTabInfo struct {
	Note string `json:"note,omitempty"` // what was left out
	File string `json:"file,omitempty"` // the table file with every row
}

type jsonSide struct {
	Label string `json:"label"`
	Src   string `json:"src"`
	N     []int  `json:"n"`   // name
	C     []int  `json:"c"`   // class
	K     []int  `json:"k"`   // number of children
	G     []int  `json:"g"`   // repeat groups: first member, count
	Why   []int  `json:"why"` // node, reason
	Res   string `json:"res"` // per node: ' ' none, p, w, e
	In    []int  `json:"in"`  // node, worst Result of the API calls inside it
}

type jsonPairs struct {
	A    []int  `json:"a"`  // first NPU node, delta
	B    []int  `json:"b"`  // first bench node, delta
	XA   []int  `json:"xa"` // more NPU nodes: pair, node
	XB   []int  `json:"xb"` // more bench nodes: pair, node
	Band string `json:"band"`
	Kind string `json:"kind"`
	Sc   []int  `json:"sc"` // score, percent
	Mg   []int  `json:"mg"` // margin, percent
	Rs   []int  `json:"rs"` // reasons, -1 none
	Pv   string `json:"pv"` // proven: 1 or 0
	Note []int  `json:"note"`
}

type jsonConf struct {
	Class string      `json:"class"`
	Rev   bool        `json:"rev,omitempty"`
	Res   string      `json:"res"`
	Pv    bool        `json:"pv"`
	Inst  [][2]string `json:"inst"` // path, wants
}

type jsonSum struct {
	Facts [][2]string `json:"facts"`
	Notes []string    `json:"notes"`
	// Cnt are the suggest run's counts: per side modules, paired, N:1
	// parts, then pairs and pairs of containers (absent in compare mode).
	Cnt   []int      `json:"cnt,omitempty"`
	First *jsonFirst `json:"first,omitempty"`
}

type jsonFirst struct {
	A   int      `json:"a"` // NPU module, -1
	B   int      `json:"b"` // bench module, -1
	AE  string   `json:"ae"`
	BE  string   `json:"be"`
	Row string   `json:"row"`
	Msg []string `json:"msg"`
}

type jsonMap struct {
	Name   string  `json:"name"`
	Text   string  `json:"text"`
	Blocks [][]any `json:"blocks"` // class, last line of its block, 1 for an inline "{}" block
	Indent int     `json:"indent"`
	Empty  int     `json:"empty"` // line of a top-level "{}", 0 when none
	Rules  [][]any `json:"rules"` // class, key: the keys already taken
}

// The table: {"hdr": [...], "s": [...], "cut": [...], "rows": [...]}. rows are [node, flags (4*api + result),
// cells...], each cell a string or an index into s (cells that occur more
// than once); cut lists node, rows in the table file, for the modules
// some of whose rows were left out.

// encoder numbers the nodes and interns the strings.
type encoder struct {
	s     []string
	sid   map[string]int
	index [2]map[*printparse.Node]int
}

func (e *encoder) str(s string) int {
	if i, ok := e.sid[s]; ok {
		return i
	}
	e.sid[s] = len(e.s)
	e.s = append(e.s, s)
	return len(e.s) - 1
}

func (e *encoder) node(side int, n *printparse.Node) int {
	if n == nil {
		return -1
	}
	if i, ok := e.index[side][n]; ok {
		return i
	}
	return -1
}

func pct(f float64) int {
	if math.IsNaN(f) {
		return 0
	}
	return int(math.Round(max(0, min(1, f)) * 100))
}

// encode builds the page's data but the table.
func encode(v *View) (*jsonView, *encoder) {
	e := &encoder{sid: map[string]int{}}
	j := &jsonView{V: 1, Mode: v.Mode, Title: v.Title}
	for k, s := range [2]*Side{v.NPU, v.Bench} {
		e.index[k] = map[*printparse.Node]int{}
		j.Sides[k] = e.side(k, s)
	}
	e.pairs(v, j)
	e.resolved(v, j)
	for _, c := range v.Conflicts {
		jc := jsonConf{Class: c.Class, Rev: c.Reverse, Res: c.Resolution, Pv: c.Proven, Inst: [][2]string{}}
		for _, in := range c.Instances {
			jc.Inst = append(jc.Inst, [2]string{in.Path, strings.Join(in.Wants, ", ")})
		}
		j.Conf = append(j.Conf, jc)
	}
	j.Sum = jsonSum{Facts: v.Summary.Facts, Notes: v.Summary.Notes}
	if c := v.Summary.Counts; c != nil {
		j.Sum.Cnt = []int{c.NPU.Modules, c.NPU.Paired, c.NPU.Parts, c.Bench.Modules, c.Bench.Paired, c.Bench.Parts, c.Pairs, c.Containers}
	}
	if f := v.Summary.First; f != nil {
		j.Sum.First = &jsonFirst{A: e.node(0, f.NPU), B: e.node(1, f.Bench), AE: f.NPUEntry, BE: f.BenchEntry, Row: f.Row, Msg: f.Messages}
	}
	if v.Mapping != nil {
		j.Map = encodeMap(v.Mapping)
	}
	if v.Table != nil {
		j.TabInfo = &jsonTabInfo{Note: v.Table.Note, File: v.Table.File}
	}
	j.S = e.s
	if j.Conf == nil {
		j.Conf = []jsonConf{}
	}
	if j.Sum.Facts == nil {
		j.Sum.Facts = [][2]string{}
	}
	if j.Sum.Notes == nil {
		j.Sum.Notes = []string{}
	}
	return j, e
}

func (e *encoder) side(k int, s *Side) jsonSide {
	js := jsonSide{Label: s.Label, Src: s.Tree.Source, G: []int{}, Why: []int{}, In: []int{}}
	var res strings.Builder
	var groupStart *printparse.Repeat
	s.Tree.Walk(func(n *printparse.Node) bool {
		i := len(js.N)
		e.index[k][n] = i
		js.N = append(js.N, e.str(n.Name))
		js.C = append(js.C, e.str(n.Class))
		js.K = append(js.K, len(n.Children))
		res.WriteByte(" pwe"[s.Result[n]])
		if r := s.Inner[n]; r != NoResult {
			js.In = append(js.In, i, int(r))
		}
		if w, ok := s.Why[n]; ok {
			js.Why = append(js.Why, i, e.str(w))
		}
		return true
	})
	// Repeat groups: consecutive siblings sharing one *Repeat.
	s.Tree.Walk(func(n *printparse.Node) bool {
		groupStart = nil
		run := 0
		for ci, c := range n.Children {
			if c.Repeat != nil && c.Repeat == groupStart {
				run++
				continue
			}
			if run > 1 {
				js.G = append(js.G, e.index[k][n.Children[ci-run]], run)
			}
			groupStart, run = c.Repeat, 1
		}
		if run > 1 && groupStart != nil {
			js.G = append(js.G, e.index[k][n.Children[len(n.Children)-run]], run)
		}
		return true
	})
	js.Res = res.String()
	return js
}

func (e *encoder) pairs(v *View, j *jsonView) {
	type ip struct {
		p    *Pair
		a, b int
	}
	ps := make([]ip, 0, len(v.Pairs))
	for i := range v.Pairs {
		p := &v.Pairs[i]
		if len(p.NPU) == 0 || len(p.Bench) == 0 {
			continue
		}
		ps = append(ps, ip{p, e.node(0, p.NPU[0]), e.node(1, p.Bench[0])})
	}
	slices.SortStableFunc(ps, func(x, y ip) int { return cmp.Compare(x.a, y.a) })
	jp := &j.P
	jp.XA, jp.XB, jp.Note = []int{}, []int{}, []int{}
	var band, kind, pv strings.Builder
	pa, pb := 0, 0
	for i, q := range ps {
		jp.A = append(jp.A, q.a-pa)
		jp.B = append(jp.B, q.b-pb)
		pa, pb = q.a, q.b
		for _, n := range q.p.NPU[1:] {
			jp.XA = append(jp.XA, i, e.node(0, n))
		}
		for _, n := range q.p.Bench[1:] {
			jp.XB = append(jp.XB, i, e.node(1, n))
		}
		band.WriteByte(bandChar(q.p.Band))
		kind.WriteByte(kindChar(q.p.Kind))
		jp.Sc = append(jp.Sc, pct(q.p.Score))
		jp.Mg = append(jp.Mg, pct(q.p.Margin))
		if len(q.p.Reasons) > 0 {
			jp.Rs = append(jp.Rs, e.str(strings.Join(q.p.Reasons, ",")))
		} else {
			jp.Rs = append(jp.Rs, -1)
		}
		if q.p.Proven {
			pv.WriteByte('1')
		} else {
			pv.WriteByte('0')
		}
		if q.p.Note != "" {
			jp.Note = append(jp.Note, i, e.str(q.p.Note))
		}
	}
	jp.Band, jp.Kind, jp.Pv = band.String(), kind.String(), pv.String()
	if jp.A == nil {
		jp.A, jp.B, jp.Sc, jp.Mg, jp.Rs = []int{}, []int{}, []int{}, []int{}, []int{}
	}
}

func bandChar(b Band) byte {
	switch b {
	case Sure:
		return 's'
	case Check:
		return 'c'
	case Unsure:
		return 'u'
	}
	return '-'
}

func kindChar(k Kind) byte {
	switch k {
	case Fused:
		return 'f'
	case Absorbed:
		return 'a'
	case Experts:
		return 'e'
	case Root:
		return 'r'
	case ByHand:
		return 'm'
	}
	return '1'
}

// resolved records where msprobe's resolver, given the mapping, sends an
// NPU module elsewhere than its 1:1 partner: the page's manual matching
// starts from what msprobe would do.
func (e *encoder) resolved(v *View, j *jsonView) {
	j.RX = []int{}
	m := mapping.New()
	if v.Mapping != nil {
		m = v.Mapping.Mapping
	}
	partner := map[*printparse.Node]*printparse.Node{}
	for _, p := range v.Pairs {
		if len(p.NPU) == 1 && len(p.Bench) == 1 {
			partner[p.NPU[0]] = p.Bench[0]
		}
	}
	for _, r := range resolve.New(m).ResolveTree(v.NPU.Tree, v.Bench.Tree) {
		if partner[r.NPU] != r.Bench {
			j.RX = append(j.RX, e.node(0, r.NPU), e.node(1, r.Bench))
		}
	}
	seen := map[string]bool{}
	j.Generic = []int{}
	v.NPU.Tree.Walk(func(n *printparse.Node) bool {
		if !seen[n.Class] && infer.GenericClass(n.Class) {
			seen[n.Class] = true
			j.Generic = append(j.Generic, e.str(n.Class))
		}
		return true
	})
}

func encodeMap(mf *MappingFile) *jsonMap {
	jm := &jsonMap{Name: mf.Name, Text: mf.Text, Blocks: [][]any{}, Rules: [][]any{}, Indent: 2}
	last := map[string]int{}
	var order []string
	indentSet := false
	for _, c := range mf.Mapping.Classes {
		if _, ok := last[c.Class]; !ok {
			order = append(order, c.Class)
		}
		end, inline := c.Pos.Line, 0
		if len(c.Rules) == 0 {
			inline = 1
		}
		for _, r := range c.Rules {
			end = max(end, r.KeyPos.Line, r.ValuePos.Line)
			if !indentSet && r.KeyPos.Col > 1 {
				jm.Indent, indentSet = r.KeyPos.Col-1, true
			}
			jm.Rules = append(jm.Rules, []any{c.Class, r.Key})
		}
		last[c.Class] = end
		if inline == 1 {
			last[c.Class] = -end
		}
	}
	for _, c := range order {
		l, inline := last[c], 0
		if l < 0 {
			l, inline = -l, 1
		}
		jm.Blocks = append(jm.Blocks, []any{c, l, inline})
	}
	for i, l := range strings.Split(mf.Text, "\n") {
		if strings.TrimSpace(l) == "{}" {
			jm.Empty = i + 1
		}
	}
	return jm
}

// writeTable writes the table's JSON object, a row at a time.
func (e *encoder) writeTable(w *bufio.Writer, t *Table) error {
	nodes := slices.Collect(maps.Keys(t.Rows))
	slices.SortFunc(nodes, func(a, b *printparse.Node) int { return cmp.Compare(e.node(0, a), e.node(0, b)) })
	// each cell hashed once: cells[k] is the k-th cell's distinct string
	ids := map[string]int32{}
	var distinct []string
	var count []int32
	var cells []int32
	for _, n := range nodes {
		for _, r := range t.Rows[n] {
			for _, c := range r.Cells {
				id, ok := ids[c]
				if !ok {
					id = int32(len(distinct))
					ids[c] = id
					distinct, count = append(distinct, c), append(count, 0)
				}
				count[id]++
				cells = append(cells, id)
			}
		}
	}
	shared := []string{}
	sid := make([]int32, len(distinct)) // index in shared + 1, 0 for none
	for _, id := range cells {
		if sid[id] == 0 && count[id] > 1 && len(distinct[id]) >= 3 {
			shared = append(shared, distinct[id])
			sid[id] = int32(len(shared))
		}
	}
	// by node, so that the page is the same for the same table
	cuts := make([][2]int, 0, len(t.Total))
	for n, total := range t.Total {
		cuts = append(cuts, [2]int{e.node(0, n), total})
	}
	slices.SortFunc(cuts, func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	cut := make([]int, 0, 2*len(cuts))
	for _, c := range cuts {
		cut = append(cut, c[0], c[1])
	}
	head := struct {
		Hdr []string `json:"hdr"`
		S   []string `json:"s"`
		Cut []int    `json:"cut"`
	}{t.Header, shared, cut}
	if head.Hdr == nil {
		head.Hdr = []string{}
	}
	b, err := json.Marshal(head)
	if err != nil {
		return err
	}
	w.Write(b[:len(b)-1])
	w.WriteString(`,"rows":[`)
	var row []byte
	for k, n := range nodes {
		for j, r := range t.Rows[n] {
			flags := int(r.Result)
			if r.API {
				flags += 4
			}
			row = row[:0]
			if k > 0 || j > 0 {
				row = append(row, ',')
			}
			row = append(row, '[')
			row = strconv.AppendInt(row, int64(e.node(0, n)), 10)
			row = append(row, ',')
			row = strconv.AppendInt(row, int64(flags), 10)
			for _, c := range r.Cells {
				row = append(row, ',')
				if i := sid[cells[0]]; i > 0 {
					row = strconv.AppendInt(row, int64(i-1), 10)
				} else if row, err = appendJSONString(row, c); err != nil {
					return err
				}
				cells = cells[1:]
			}
			row = append(row, ']')
			if _, err := w.Write(row); err != nil {
				return err
			}
		}
	}
	_, err = w.WriteString("]}")
	return err
}

// appendJSONString appends s as encoding/json writes it: quoted as it is
// when it holds only printable ASCII that needs no escape (most cells),
// else as json.Marshal gives it.
func appendJSONString(dst []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if !jsonPlain[s[i]] {
			b, err := json.Marshal(s)
			return append(dst, b...), err
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"'), nil
}

// jsonPlain are the bytes encoding/json writes as they are: printable
// ASCII but for the quote, the backslash and HTML's <, > and &.
var jsonPlain = func() (t [256]bool) {
	for c := ' '; c < 0x7f; c++ {
		t[c] = !strings.ContainsRune(`"\<>&`, c)
	}
	return t
}()

// writeData writes the page's data but the table (bounded by the two
// trees). encoding/json escapes <, > and &, so the text is safe inside a
// <script> element.
func writeData(w io.Writer, v *View) (*encoder, error) {
	j, e := encode(v)
	b, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return e, err
}
