package resolve

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unsafe"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/offheap"
	"github.com/layermap/layermap/printparse/source"
)

// DumpInput is what msprobe's layer mapping reads from one dump folder.
type DumpInput struct {
	// Source names the folder (for messages).
	Source string
	// Paths are the folder's files, to place errors at their line (when
	// empty, errors name Source only).
	Paths msprobe.Paths
	// Framework is "pytorch", "mindspore" or "mindtorch".
	Framework string
	// Names are the keys of dump.json "data", in file order.
	Names *msprobe.Names
	// Parents holds construct.json: each entry's parent ("" for none).
	// Only the parent of the Megatron [parent, micro_step] form is kept.
	Parents *msprobe.ParentIndex
	// Stack holds the old-format stack.json entries ({name: [frame, ...]})
	// of the names.
	// Values that are not lists of strings are kept as invalid so that the
	// error surfaces only where msprobe would raise it.
	Stack map[string]StackEntry
	// ConstructEmpty and StackEmpty report an empty or missing file: msprobe
	// then builds no items at all.
	ConstructEmpty, StackEmpty bool

	path      string // the folder as given
	allNames  bool   // Names are every key of "data" (msprobe.EntryNames)
	noRepeats bool   // rows were read or entries skimmed, and "data" repeats no key
	scanned   bool   // Names were read with the rows, in the same pass
}

// StackEntry is one old-format stack.json value.
type StackEntry struct {
	Frames []string
	Valid  bool   // a list of strings
	Raw    string // the JSON text, for messages when invalid
}

const (
	layerCell   = "Cell"
	layerModule = "Module"
)

// regexps of find_regard_scope (start, end) per framework.
var stackSigns = map[string][2]*regexp.Regexp{
	"mindspore": {regexp.MustCompile(`Template`), regexp.MustCompile(`construct`)},
	"pytorch":   {regexp.MustCompile(`Template`), regexp.MustCompile(`in (for|back)ward,`)},
}

var (
	frameFiles = []string{"site-packages/torch", "package/torch", "site-packages/mindspore", "package/mindspore"}
	skipFiles  = []string{"msprobe", "MindSpeed"}
	skipFuncs  = []string{"construct", "__call__"}
)

// ItemsFromDump parses every dump name into an Item with msprobe's full
// scope (data_scope_parser.DumpDataItem) and runs msprobe's post-processing
// passes (backward scope copy, ParallelTransformer layer renumbering). It
// returns no items when construct.json or stack.json is empty or missing,
// as msprobe does.
func ItemsFromDump(in DumpInput) ([]*Item, error) {
	d, err := parseDump(in)
	if err != nil || d == nil {
		return nil, err
	}
	items := make([]*Item, len(d.entries))
	for i := range items {
		items[i] = d.item(i)
	}
	return items, nil
}

// dumpItems are a dump's items in the compact form a dump trie keeps
// (a few bytes an entry, not an Item): each entry's full scope and state
// as indexes into the distinct ones, its name by position, and, once
// placed in a trie, its ordinal there. Its type is read again from its
// name when asked (dumpName).
type dumpItems struct {
	names   *msprobe.Names // dump.json's keys, in order
	scopes  []string       // the distinct full scopes
	states  []string       // the distinct states
	entries []dumpEntry
	free    func()      // releases entries
	nodes   []*TrieNode // the node of each full scope, once placed
}

// dumpEntry is one dump item: indexes into its dumpItems' scopes and
// states, and its ordinal among the same-state items of its node.
type dumpEntry struct {
	scope, state, ord int32
}

// item makes the Item of entry i.
func (d *dumpItems) item(i int) *Item {
	it := &Item{}
	d.fill(it, i, d.names.At(i))
	return it
}

// fill sets it to entry i, named name.
func (d *dumpItems) fill(it *Item, i int, name string) {
	e := d.entries[i]
	*it = Item{Name: name, State: d.states[e.state], Type: dumpName(name).typ, FullScope: d.scopes[e.scope], ord: int(e.ord)}
	if d.nodes != nil {
		it.node = d.nodes[e.scope]
	}
}

// parseDump is ItemsFromDump in compact form (nil for no items).
func parseDump(in DumpInput) (*dumpItems, error) {
	if in.ConstructEmpty || in.StackEmpty {
		return nil, nil
	}
	d := &dumpItems{names: in.Names}
	d.entries, d.free = offheap.Make[dumpEntry](in.Names.Len()) // a trie's largest part
	offheap.Cleanup(d, d.free)
	c := newScopeCache()
	states := map[string]int32{}
	var renumbered []int32 // the entries of the class renumberPass rebases below
	var backward []int32   // the entries backwardPass gives their forward twin's scope
	// names read in place: parseDumpItem keeps nothing of a name but in
	// its errors, and a new state is copied
	for i, name := range in.Names.All() {
		full, dn, err := parseDumpItem(in, i, name, c)
		if err != nil {
			_, _, err = parseDumpItem(in, i, in.Names.At(i), c)
			return nil, in.place(i, err)
		}
		st, ok := states[dn.state]
		if !ok {
			st = int32(len(d.states))
			state := strings.Clone(dn.state)
			states[state] = st
			d.states = append(d.states, state)
		}
		d.entries[i] = dumpEntry{scope: full, state: st}
		if dn.typ == renumberedClass {
			renumbered = append(renumbered, int32(i))
		}
		if backwardTail(name) {
			backward = append(backward, int32(i))
		}
	}
	d.backwardPass(backward)
	d.renumberPass(renumbered, renumberedLayers, c)
	d.scopes = c.scopes
	return d, nil
}

// itemError is a refusal of parseDumpItem: the file it concerns (a
// msprobe.*Name constant) and the key there.
type itemError struct {
	file, key, expected, found string
}

func (e *itemError) Error() string { return e.key + ": expected " + e.expected + ", found " + e.found }

// place turns an itemError about entry i into a *source.Error at the
// line of its file.
func (in DumpInput) place(i int, err error) error {
	e, ok := err.(*itemError)
	if !ok || in.Paths.Dir == "" {
		return fmt.Errorf("%s: %w", in.Source, err)
	}
	se := &source.Error{Expected: e.expected, Found: e.found}
	switch e.file {
	case msprobe.DumpJSONName:
		se.File = in.Paths.DumpJSON
		se.Line = msprobe.EntryLine(se.File, i)
	case msprobe.ConstructJSONName:
		se.File = in.Paths.ConstructJSON
		se.Line = msprobe.KeyLine(se.File, e.key)
	case msprobe.StackJSONName:
		se.File = in.Paths.StackJSON
		se.Line = msprobe.KeyLine(se.File, e.key)
	}
	return se
}

// TrieFromItems inserts items into a new trie in order. Items whose full
// scope is one string (ItemsFromDump gives each distinct full scope once)
// share its segments and its node, found by the string's address (a dump
// has many calls per scope); others are inserted segment by segment, to
// the same node as their equals.
func TrieFromItems(source string, items []*Item) *Trie {
	t := NewTrie(source)
	t.items = make([]*Item, 0, len(items))
	type addr struct {
		p *byte
		n int
	}
	seen := map[addr]*TrieNode{}
	for _, it := range items {
		key := addr{unsafe.StringData(it.FullScope), len(it.FullScope)}
		if n, ok := seen[key]; ok {
			t.add(n, it)
			continue
		}
		seen[key] = t.Insert(it)
	}
	return t
}

// trieOfDump places a dump's items in a new trie, in order, as
// TrieFromItems places them: the trie keeps them in their compact form.
func trieOfDump(source string, d *dumpItems) *Trie {
	t := NewTrie(source)
	t.dump = d
	d.nodes = make([]*TrieNode, len(d.scopes))
	// The nodes first, and how many items each takes of each state: their
	// positions are then placed in one array, cut to size.
	type nodeState struct {
		n     *TrieNode
		state int32
	}
	count := map[nodeState]int{}
	for i := range d.entries {
		e := &d.entries[i]
		n := d.nodes[e.scope]
		if n == nil {
			n = t.Root
			scope := strings.Split(d.scopes[e.scope], ".")[1:]
			for _, seg := range scope {
				n = n.child(seg)
			}
			if n.scope == nil {
				n.scope = scope
			}
			d.nodes[e.scope] = n
		}
		count[nodeState{n, e.state}]++
	}
	positions := make([]int32, len(d.entries))
	last := make([]int32, len(d.scopes)) // the last item of each full scope
	for i := range d.entries {
		e := &d.entries[i]
		n, state := d.nodes[e.scope], d.states[e.state]
		if n.stateAt(state) < 0 {
			c := count[nodeState{n, e.state}]
			n.items = append(n.items, stateItems{state: state, pos: positions[:0:c]})
			positions = positions[c:]
		}
		e.ord = int32(n.place(state, i))
		last[e.scope] = int32(i)
	}
	// a node's type is its last item's: full scopes that differ in their
	// first segment share a node
	lastAt := map[*TrieNode]int32{}
	for id, n := range d.nodes {
		if n == nil {
			continue // no item has this scope (a backward or rebased item's first)
		}
		if k, ok := lastAt[n]; !ok || last[id] > k {
			lastAt[n] = last[id]
		}
	}
	for n, i := range lastAt {
		n.Type, n.Typed = dumpName(d.names.At(int(i))).typ, true
	}
	return t
}

// scopeCache keeps what dump items share: each distinct full scope once,
// by index.
type scopeCache struct {
	ids    map[string]int32
	scopes []string
	buf    []byte
	parent []byte // parseDumpItem's parent, read in place

	// frames holds frameStackScope's answer for each frames list, by
	// its array: the entries whose stack.json values are the same text
	// share one (readStackRaw).
	frames map[framesKey]frameScope
}

type framesKey struct {
	first *string
	n     int
}

type frameScope struct {
	scope string
	err   error
}

func newScopeCache() *scopeCache {
	return &scopeCache{ids: map[string]int32{}, frames: map[framesKey]frameScope{}}
}

// frameStackScope is frameStackScope of frames, once per list.
func (c *scopeCache) frameStackScope(framework string, frames []string) (string, error) {
	k := framesKey{unsafe.SliceData(frames), len(frames)}
	r, ok := c.frames[k]
	if !ok {
		r.scope, r.err = frameStackScope(framework, frames)
		c.frames[k] = r
	}
	return r.scope, r.err
}

// fullScope returns the index of the parts joined by '.', kept once.
func (c *scopeCache) fullScope(parts ...string) int32 {
	b := c.buf[:0]
	for i, p := range parts {
		if i > 0 {
			b = append(b, '.')
		}
		b = append(b, p...)
	}
	c.buf = b
	id, ok := c.ids[string(b)]
	if !ok {
		id = int32(len(c.scopes))
		s := string(b)
		c.ids[s] = id
		c.scopes = append(c.scopes, s)
	}
	return id
}

// dumpNameParts is what msprobe reads from a dump name alone.
type dumpNameParts struct {
	apiType, apiName, typ, state string
	fields                       int // '.'-separated fields; msprobe refuses fewer than 4
}

// dumpName reads a dump name's API type, API name, type name and state
// (DumpDataItem's set_api_type_and_name and friends).
func dumpName(name string) dumpNameParts {
	first, last, n := nameFields(name) // last[k] is field n-1-k
	p := dumpNameParts{fields: n}
	switch {
	case n < 4:
	case last[0] == StateParamsGrad:
		p.apiType, p.apiName, p.typ, p.state = StateParamsGrad, last[2], last[1], StateParamsGrad
	case last[1] == StateParamsGrad && msprobe.IsDigits(last[0]):
		p.apiType, p.apiName, p.typ, p.state = StateParamsGrad, last[3], last[2], StateParamsGrad
	default:
		p.apiType, p.typ = first, last[2]
		if p.apiType == layerCell || p.apiType == layerModule {
			p.apiName, p.state = last[3], last[1]
		} else {
			p.apiName, p.state = p.typ, last[0]
		}
	}
	return p
}

// parseDumpItem reads one dump name, the i-th: the index of its full
// scope in c, and what its name tells.
func parseDumpItem(in DumpInput, i int, name string, c *scopeCache) (int32, dumpNameParts, error) {
	p := dumpName(name)
	n := p.fields
	if n < 4 {
		return 0, p, &itemError{msprobe.DumpJSONName, name, "an entry name of at least four '.'-separated fields (msprobe refuses it)", strconv.Quote(name)}
	}
	apiType, apiName := p.apiType, p.apiName
	isLayer := apiType == layerCell || apiType == layerModule
	c.parent = in.Parents.AppendParentOf(c.parent[:0], i, name)
	parent := unsafe.String(unsafe.SliceData(c.parent), len(c.parent))

	// layer scope (set_layer_scope): the fields of the name without the
	// API type, or of the parent, but the last three
	layerScope := mapping.TopLayer
	switch {
	case isLayer:
		layerScope = fieldsPrefix(name, n-4)
	case apiType == StateParamsGrad:
		layerScope = fieldsPrefix(name, n-3)
	case parent != "":
		// the parent's fields but the last three (Python [:-3]), in place
		layerScope = fieldsPrefix(parent, strings.Count(parent, ".")+1-3)
	}
	if parent != "" && strings.Contains(parent, ".") && strings.Count(parent, ".") < 3 {
		return 0, p, &itemError{msprobe.ConstructJSONName, name, "a parent name of at least four '.'-separated fields (msprobe refuses it)", fmt.Sprintf("%q as the parent of %q", parent, name)}
	}

	// stack scope (set_stack_scope), frame part only
	frameScope := ""
	if !isLayer && apiType != "Primitive" && apiType != "Jit" {
		if st, ok := in.Stack[name]; ok && !(st.Valid && len(st.Frames) == 0) {
			if !st.Valid {
				return 0, p, &itemError{msprobe.StackJSONName, name, "a list of strings as the stack of " + strconv.Quote(name), st.Raw}
			}
			fs, err := c.frameStackScope(in.Framework, st.Frames)
			if err != nil {
				return 0, p, &itemError{msprobe.StackJSONName, name, "call stack frames msprobe can read for " + strconv.Quote(name), err.Error()}
			}
			frameScope = fs
		}
	}
	if frameScope != "" {
		return c.fullScope(layerScope, frameScope, apiName), p, nil
	}
	return c.fullScope(layerScope, apiName), p, nil
}

// nameFields returns the first '.'-separated field of name, its last
// four (last[0] the last one), and the number of fields.
func nameFields(name string) (first string, last [4]string, n int) {
	n = strings.Count(name, ".") + 1
	first, _, _ = strings.Cut(name, ".")
	end := len(name)
	for k := 0; k < 4 && k < n; k++ {
		i := strings.LastIndexByte(name[:end], '.')
		last[k] = name[i+1 : end]
		end = max(i, 0)
	}
	return first, last, n
}

// fieldsPrefix is the first k '.'-separated fields of s joined by '.'
// ("" for none).
func fieldsPrefix(s string, k int) string {
	if k <= 0 {
		return ""
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			if k--; k == 0 {
				return s[:i]
			}
		}
	}
	return s
}

// frameStackScope is msprobe's find_regard_scope + find_stack_func_list +
// get_stack_in_lines for the framework frame.
func frameStackScope(framework string, frames []string) (string, error) {
	signs, ok := stackSigns[framework]
	if !ok {
		return "", fmt.Errorf("no stack rules for framework %q", framework)
	}
	start, end := -1, len(frames)
	for i, f := range frames {
		if signs[0].MatchString(f) {
			start = i
		} else if start >= 0 && signs[1].MatchString(f) {
			end = i
			break
		}
	}
	var window []string
	if start+1 < end {
		window = frames[start+1 : end]
	}
	frame := ""
	for _, l := range window {
		file := strings.Split(l, ",")[0]
		if containsAny(file, frameFiles) {
			frame = l
			continue
		}
		break
	}
	if frame == "" {
		return "", nil
	}
	ele := strings.Split(frame, ",")
	if containsAny(ele[0], skipFiles) {
		return "", nil
	}
	if len(ele) < 3 {
		return "", fmt.Errorf("frame %q: expected 'File ..., line ..., in func' (msprobe crashes on it)", frame)
	}
	if containsAny(ele[2], skipFuncs) {
		return "", nil
	}
	f := strings.Fields(ele[2])
	if len(f) < 2 {
		return "", fmt.Errorf("frame %q: expected 'in func' after the line number (msprobe crashes on it)", frame)
	}
	return f[1], nil
}

func containsAny(s string, subs []string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}

// backwardPass gives each backward item (those backwardTail finds, in
// order) the scope of its forward twin (postprocess_pass.backward_pass).
func (d *dumpItems) backwardPass(backward []int32) {
	var b, nb []byte
	for _, i := range backward {
		nb = d.names.Append(nb[:0], int(i))
		name := unsafe.String(unsafe.SliceData(nb), len(nb))
		// the name with "backward" read as "forward" in its last two
		// parts (backwardTail: one of them is "backward")
		cut := 0
		if j := strings.LastIndexByte(name, '.'); j >= 0 {
			cut = strings.LastIndexByte(name[:j], '.') + 1
		}
		b = append(append(b[:0], name[:cut]...), strings.ReplaceAll(name[cut:], StateBackward, StateForward)...)
		fwName := unsafe.String(unsafe.SliceData(b), len(b))
		if fw, ok := d.names.Find(fwName); ok {
			d.entries[i].scope = d.entries[fw].scope
		}
	}
}

// backwardTail reports whether one of the last two dot-parts of name is
// "backward".
func backwardTail(name string) bool {
	i := strings.LastIndexByte(name, '.')
	if name[i+1:] == StateBackward {
		return true
	}
	if i < 0 {
		return false
	}
	j := strings.LastIndexByte(name[:i], '.')
	return name[j+1:i] == StateBackward
}

// The class whose layers renumberPass rebases, and the segment below it
// that holds them.
const (
	renumberedClass  = "ParallelTransformer"
	renumberedLayers = "layers"
)

// renumberPass rebases the layer index below every module of a class
// (postprocess_pass.renumber_index_pass) given its entries, in order: for
// prefix = full scope + "." + suffix, the last digit run of the next
// segment minus the minimum over all items replaces that segment. It works
// on the distinct full scopes the items have; the rebased ones are kept
// in c too.
func (d *dumpItems) renumberPass(class []int32, suffix string, c *scopeCache) {
	var prefixes []string
	seen := map[string]bool{}
	for _, i := range class {
		pre := c.scopes[d.entries[i].scope] + "." + suffix
		if !seen[pre] {
			seen[pre] = true
			prefixes = append(prefixes, pre)
		}
	}
	for _, pre := range prefixes {
		used := make([]bool, len(c.scopes))
		for _, e := range d.entries {
			used[e.scope] = true
		}
		re := regexp.MustCompile(`^` + regexp.QuoteMeta(pre) + `\.(\S+?)(?:\.|$)`)
		type match struct {
			id   int32
			v    float64
			next string
		}
		var matches []match // the scopes in use below pre
		minIdx := math.Inf(1)
		for id, u := range used {
			if !u {
				continue
			}
			if v, next, ok := nextNumber(re, c.scopes[id]); ok {
				matches = append(matches, match{int32(id), v, next})
				minIdx = math.Min(minIdx, v)
			}
		}
		rebased := map[int32]int32{}
		for _, m := range matches {
			rel := m.v - minIdx // inf - inf is NaN, as in Python
			if math.IsInf(rel, 0) {
				continue
			}
			idx := "nan"
			if !math.IsNaN(rel) {
				idx = strconv.FormatInt(int64(rel), 10)
			}
			// the rest is "" or starts with '.' (the next segment's end)
			if rest := c.scopes[m.id][len(pre)+1+len(m.next):]; rest == "" {
				rebased[m.id] = c.fullScope(pre, idx)
			} else {
				rebased[m.id] = c.fullScope(pre, idx, rest[1:])
			}
		}
		for i, e := range d.entries {
			if to, ok := rebased[e.scope]; ok {
				d.entries[i].scope = to
			}
		}
	}
}

var digitsRE = regexp.MustCompile(`\d+`)

// nextNumber returns the last digit run of the segment after the prefix
// (+Inf when it has none), the segment, and whether the prefix matched.
func nextNumber(re *regexp.Regexp, scope string) (float64, string, bool) {
	m := re.FindStringSubmatch(scope)
	if m == nil {
		return math.Inf(1), "", false
	}
	nums := digitsRE.FindAllString(m[1], -1)
	if len(nums) == 0 {
		return math.Inf(1), m[1], true
	}
	v, err := strconv.ParseFloat(nums[len(nums)-1], 64)
	if err != nil {
		return math.Inf(1), m[1], true
	}
	return v, m[1], true
}
