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
	Names []string
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
	if in.ConstructEmpty || in.StackEmpty {
		return nil, nil
	}
	items := make([]*Item, len(in.Names))
	slab := make([]Item, len(in.Names)) // one allocation, not one an item
	c := newScopeCache()
	for i, name := range in.Names {
		if err := parseDumpItem(in, name, c, &slab[i]); err != nil {
			return nil, in.place(i, err)
		}
		items[i] = &slab[i]
	}
	backwardPass(items)
	renumberPass(items, "ParallelTransformer", "layers", c)
	return items, nil
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
	t.Items = make([]*Item, 0, len(items))
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

// scopeCache keeps what dump items share: each distinct full scope once.
type scopeCache struct {
	full map[string]string
	buf  []byte
}

func newScopeCache() *scopeCache {
	return &scopeCache{full: map[string]string{}}
}

// fullScope returns the parts joined by '.', kept once.
func (c *scopeCache) fullScope(parts ...string) string {
	b := c.buf[:0]
	for i, p := range parts {
		if i > 0 {
			b = append(b, '.')
		}
		b = append(b, p...)
	}
	c.buf = b
	s, ok := c.full[string(b)]
	if !ok {
		s = string(b)
		c.full[s] = s
	}
	return s
}

// parseDumpItem reads one dump name into it.
func parseDumpItem(in DumpInput, name string, c *scopeCache, it *Item) error {
	first, last, n := nameFields(name) // last[k] is field n-1-k
	if n < 4 {
		return &itemError{msprobe.DumpJSONName, name, "an entry name of at least four '.'-separated fields (msprobe refuses it)", strconv.Quote(name)}
	}
	var apiType, apiName, typ, state string
	switch {
	case last[0] == StateParamsGrad:
		apiType, apiName, typ, state = StateParamsGrad, last[2], last[1], StateParamsGrad
	case last[1] == StateParamsGrad && msprobe.IsDigits(last[0]):
		apiType, apiName, typ, state = StateParamsGrad, last[3], last[2], StateParamsGrad
	default:
		apiType, typ = first, last[2]
		if apiType == layerCell || apiType == layerModule {
			apiName, state = last[3], last[1]
		} else {
			apiName, state = typ, last[0]
		}
	}
	isLayer := apiType == layerCell || apiType == layerModule
	parent := in.Parents.Parent(name)

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
		return &itemError{msprobe.ConstructJSONName, name, "a parent name of at least four '.'-separated fields (msprobe refuses it)", fmt.Sprintf("%q as the parent of %q", parent, name)}
	}

	// stack scope (set_stack_scope), frame part only
	frameScope := ""
	if !isLayer && apiType != "Primitive" && apiType != "Jit" {
		if st, ok := in.Stack[name]; ok && !(st.Valid && len(st.Frames) == 0) {
			if !st.Valid {
				return &itemError{msprobe.StackJSONName, name, "a list of strings as the stack of " + strconv.Quote(name), st.Raw}
			}
			fs, err := frameStackScope(in.Framework, st.Frames)
			if err != nil {
				return &itemError{msprobe.StackJSONName, name, "call stack frames msprobe can read for " + strconv.Quote(name), err.Error()}
			}
			frameScope = fs
		}
	}
	full := c.fullScope(layerScope, apiName)
	if frameScope != "" {
		full = c.fullScope(layerScope, frameScope, apiName)
	}
	*it = Item{Name: name, State: state, Type: typ, FullScope: full}
	return nil
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

// backwardPass gives each backward item the scope of its forward twin
// (postprocess_pass.backward_pass).
func backwardPass(items []*Item) {
	var byName map[string]*Item // built at the first backward item
	for _, it := range items {
		if !backwardTail(it.Name) {
			continue
		}
		if byName == nil {
			byName = make(map[string]*Item, len(items))
			for _, x := range items {
				byName[x.Name] = x
			}
		}
		p := strings.Split(it.Name, ".")
		tail := p[max(0, len(p)-2):] // backwardTail: one of them is "backward"
		for i := range tail {
			tail[i] = strings.ReplaceAll(tail[i], StateBackward, StateForward)
		}
		if fw := byName[strings.Join(p, ".")]; fw != nil {
			it.FullScope = fw.FullScope
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

// renumberPass rebases the layer index below every module of class typ
// (postprocess_pass.renumber_index_pass): for prefix = full scope + "." +
// suffix, the last digit run of the next segment minus the minimum over all
// items replaces that segment. The rebased scopes are kept once in c, as
// the others are (TrieFromItems finds a scope's node by its string).
func renumberPass(items []*Item, typ, suffix string, c *scopeCache) {
	var prefixes []string
	seen := map[string]bool{}
	for _, it := range items {
		if it.Type == typ {
			pre := it.FullScope + "." + suffix
			if !seen[pre] {
				seen[pre] = true
				prefixes = append(prefixes, pre)
			}
		}
	}
	for _, pre := range prefixes {
		re := regexp.MustCompile(`^` + regexp.QuoteMeta(pre) + `\.(\S+?)(?:\.|$)`)
		minIdx := math.Inf(1)
		for _, it := range items {
			if v, _, ok := nextNumber(re, it.FullScope); ok {
				minIdx = math.Min(minIdx, v)
			}
		}
		for _, it := range items {
			v, next, matched := nextNumber(re, it.FullScope)
			if !matched {
				continue
			}
			rel := v - minIdx // inf - inf is NaN, as in Python
			if math.IsInf(rel, 0) {
				continue
			}
			idx := "nan"
			if !math.IsNaN(rel) {
				idx = strconv.FormatInt(int64(rel), 10)
			}
			// the rest is "" or starts with '.' (the next segment's end)
			if rest := it.FullScope[len(pre)+1+len(next):]; rest == "" {
				it.FullScope = c.fullScope(pre, idx)
			} else {
				it.FullScope = c.fullScope(pre, idx, rest[1:])
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
