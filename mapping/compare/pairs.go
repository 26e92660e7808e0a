package compare

import (
	"fmt"
	"io"
	"runtime"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/source"
)

// LoadPairs reads a --pairs file: explicit module pairs in
// mapping.ModulePair's format (written by `layermap suggest --pairs`).
//
// Each pair maps the NPU module's entries to the bench module's: the k-th
// forward (backward) call of the NPU module to the k-th forward (backward)
// call of the bench module, and each row to the bench row with the same
// suffix (".input.0", ".parameters.weight", ...). The API entries called
// directly inside a paired call (construct.json parent) are paired the
// same way: the k-th call of an API (e.g. Functional.linear, forward)
// inside the NPU call with the k-th call of that API inside the bench call.
// Pairs take precedence over name matching and over the layer mapping
// (see PairRows).
func LoadPairs(path string) ([]mapping.ModulePair, error) {
	ps, err := mapping.ReadPairs(path)
	if err != nil {
		return nil, asInput(err)
	}
	return ps, nil
}

type sideIndex struct {
	rows     map[string][]string // entry -> row names
	order    []string
	parent   map[string]string
	children map[string][]string
}

func indexSide(p msprobe.Paths) (*sideIndex, error) {
	si := &sideIndex{rows: map[string][]string{}, children: map[string][]string{}}
	reset := func() { si.rows, si.order = map[string][]string{}, nil }
	_, err := msprobe.ScanFileExact(p.DumpJSON, reset, func(e *msprobe.Entry) error {
		names := make([]string, len(e.Items))
		for i := range e.Items {
			names[i] = e.Items[i].Name
		}
		si.rows[e.Name] = names
		si.order = append(si.order, e.Name)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if p.ConstructJSON != "" {
		si.parent, err = msprobe.ReadConstruct(p.ConstructJSON)
		if err != nil {
			return nil, err
		}
	}
	for _, e := range si.order {
		if par := si.parent[e]; par != "" {
			si.children[par] = append(si.children[par], e)
		}
	}
	return si, nil
}

// apiKey is an API entry's op and direction without its call index.
func apiKey(name string) string {
	op, _, dir := msprobe.SplitName(name)
	if op == "" {
		return name
	}
	return op + "|" + dir
}

// isModule tells a module's forward or backward call from an API call.
func isModule(entry string) bool {
	_, _, dir, ok := msprobe.ModuleEntry(entry)
	return ok && (dir == "forward" || dir == "backward")
}

// PairRows expands node pairs into row pairs for one rank pair: NPU row
// name -> the bench row's compare key, as Config.Pairs takes them. The
// key is the row's name but for a backward call, which it renumbers
// (msprobe's update_backward_call) unless fuzzy (-fm) is set. A pair
// whose module has no entry in this rank's dump gives no rows here: with
// pipeline parallelism each rank holds only some layers, so one pairs
// file serves every rank. The run's summary counts the rows each source
// matched, and a pairs file that matches no row at all makes compare
// exit 1.
func PairRows(pairs []mapping.ModulePair, npu, bench msprobe.Paths, fuzzy bool) (map[string]string, error) {
	rows, _, err := pairRows(pairs, npu, bench, &Config{Fuzzy: fuzzy})
	return rows, err
}

// pairRows is PairRows for the join of cfg, its rows not nil when there
// are pairs; known tells, per pair, whether every module it names has an
// entry in this rank pair's dumps, and when not, whether only layers the
// dumps do not hold are missing.
func pairRows(pairs []mapping.ModulePair, npu, bench msprobe.Paths, cfg *Config) (map[string]string, []pairState, error) {
	if len(pairs) == 0 {
		return nil, nil, nil
	}
	ni, err := indexSide(npu)
	if err != nil {
		return nil, nil, err
	}
	bi, err := indexSide(bench)
	if err != nil {
		return nil, nil, err
	}
	calls := func(si *sideIndex) map[string][]string {
		m := map[string][]string{}
		for _, e := range si.order {
			if path, _, dir, ok := msprobe.ModuleEntry(e); ok && (dir == "forward" || dir == "backward") {
				m[path+"|"+dir] = append(m[path+"|"+dir], e)
			}
		}
		return m
	}
	nc, bc := calls(ni), calls(bi)
	has := func(c map[string][]string) func(string) bool {
		return func(path string) bool { return len(c[path+"|forward"])+len(c[path+"|backward"]) > 0 }
	}
	known := make([]pairState, len(pairs))
	for i, p := range pairs {
		if !pairKnown(p, has(nc), has(bc)) {
			known[i] = lackingState(p, has(nc), has(bc))
		}
	}
	// The join compares a pair's bench row with the bench rows' compare
	// keys, as it does a data mapping's: those of backward calls are
	// renumbered, the k-th backward call of an op keyed as call k.
	namer := newKeyNamer(!cfg.Fuzzy, cfg.Debug)
	defer namer.release()
	renumbered := map[string]entryKey{}
	for _, e := range bi.order {
		if ek, ok := namer.entryKey(e); ok && ek.renumbered {
			renumbered[e] = ek
		}
	}
	out := map[string]string{}
	pairEntry := func(ne, be string) {
		bySuffix := map[string]string{}
		ek := renumbered[be] // (none: keyed by the row's name)
		for _, r := range bi.rows[be] {
			bySuffix[strings.ReplaceAll(r, be, "")] = ek.key(be, r)
		}
		for _, r := range ni.rows[ne] {
			if b, ok := bySuffix[strings.ReplaceAll(r, ne, "")]; ok {
				out[r] = b
			}
		}
	}
	for _, p := range pairs {
		if p.Group() {
			continue // compared by the fused plan
		}
		for _, dir := range [...]string{"forward", "backward"} {
			ne, be := nc[p.NPU+"|"+dir], bc[p.Bench+"|"+dir]
			for k := 0; k < len(ne) && k < len(be); k++ {
				pairEntry(ne[k], be[k])
				// APIs called directly inside the two calls, by position.
				bk := map[string][]string{}
				for _, c := range bi.children[be[k]] {
					if !isModule(c) {
						bk[apiKey(c)] = append(bk[apiKey(c)], c)
					}
				}
				seen := map[string]int{}
				for _, c := range ni.children[ne[k]] {
					if isModule(c) {
						continue
					}
					key := apiKey(c)
					if i := seen[key]; i < len(bk[key]) {
						pairEntry(c, bk[key][i])
					}
					seen[key]++
				}
			}
		}
	}
	return out, known, nil
}

// LoadDataMapping reads msprobe's data mapping yaml (-dm): a mapping from
// NPU row names to bench row names. A file of two pieces or more
// (dmChunk) is read in pieces (dataMappingChunks); a smaller one, or one
// the pieces leave to it, as one document, from the file opened once.
func LoadDataMapping(path string) (*DataMapping, error) {
	f, err := source.Open(path, source.MaxDataMapping)
	if err != nil {
		return nil, asInput(fmt.Errorf("data mapping: %w", err))
	}
	defer f.Close()
	readErr := func(err error) error {
		return asInput(fmt.Errorf("data mapping: %w", &source.Error{File: path, Err: err}))
	}
	if st, err := f.Stat(); err == nil && st.Size() >= 2*dmChunk {
		lr := &io.LimitedReader{R: f, N: source.MaxDataMapping + 1}
		m, ok, err := dataMappingChunks(lr, runtime.GOMAXPROCS(0), dmChunk)
		switch {
		case err != nil:
			return nil, readErr(err)
		case ok && lr.N > 0:
			return m, nil
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, readErr(err)
		}
	}
	b, err := source.ReadAll(f, path, source.MaxDataMapping) // grown past the limit: refused
	if err != nil {
		return nil, asInput(fmt.Errorf("data mapping: %w", err))
	}
	return dataMappingWhole(path, b)
}

// dataMappingWhole reads the data mapping b (from path) as one YAML
// document.
func dataMappingWhole(path string, b []byte) (*DataMapping, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, source.YAMLError(path, b, err)
	}
	m := newDataMapping()
	if len(doc.Content) == 0 {
		m.done()
		return m, nil
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, source.Errorf(path, top.Line, "expected a mapping of NPU row names to bench row names, found %s", mapping.Describe(top))
	}
	if bad := scalarPairs(top, m.add); bad >= 0 { // m.add: a repeated key's last pair wins, as with PyYAML
		m.drop()
		return nil, source.Errorf(path, top.Content[bad].Line, "expected \"npu_row: bench_row\", found %s", mapping.Describe(top.Content[bad+1]))
	}
	m.done()
	return m, nil
}
