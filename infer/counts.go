package infer

import (
	"github.com/layermap/layermap/mapping/resolve"
	"github.com/layermap/layermap/printparse"
)

// Counts are the figures every output of a suggest run states (the text
// report, --report json and the HTML view's summary), from one definition:
//
//   - a module is one msprobe dumps (resolve.HasDumpEntry: not a root, not
//     a model of a printed list, not a container without forward such as
//     ModuleList or ModuleDict);
//   - a module is paired when one of Result.Pairs holds it (1:1, an N:1
//     stand-in, or a manual match), or one of Result.Roots (an engine
//     wrapper set aside with the roots, such as FSDP's
//     _fsdp_wrapped_module);
//   - the unmatched modules that belong to an N:1 group (the parts a fused
//     module computes at once, or the fused module itself when nothing
//     stands in for it) are counted apart as Parts: msprobe compares them
//     through the group, with the sidecar.
//
// Pairs of containers msprobe never dumps (ModuleList "layers") hold YAML
// lines but no row: they are Containers. validate counts the same modules;
// its paired ones are those msprobe's resolver pairs with the mapping,
// which are these when the draft proves every pair (Draft.Proven 1) and
// needs no sidecar.
type Counts struct {
	NPU   SideCounts `json:"npu"`
	Bench SideCounts `json:"bench"`
	// Pairs is len(Result.Pairs): pairs of modules msprobe dumps
	// (NPU.Paired of them) and Containers.
	Pairs      int `json:"pairs"`
	Containers int `json:"container_pairs"`
}

// SideCounts are one side's Counts.
type SideCounts struct {
	Modules   int `json:"modules"`
	Paired    int `json:"paired"`
	Unmatched int `json:"unmatched"`
	// Parts are the unmatched modules compared through an N:1 group.
	Parts int `json:"n1_parts"`
}

// Coverage is Paired/Modules (0 when there are no modules).
func (c SideCounts) Coverage() float64 {
	if c.Modules == 0 {
		return 0
	}
	return float64(c.Paired) / float64(c.Modules)
}

// count computes the counts of pairs and roots over the two trees; parts
// are, per side, the paths of N:1 group modules.
func count(npu, bench *printparse.Tree, pairs, roots []Pair, parts [2]map[string]bool) Counts {
	c := Counts{Pairs: len(pairs)}
	held := [2]map[string]bool{{}, {}}
	for _, p := range roots {
		held[npuSide][p.NPU], held[benchSide][p.Bench] = true, true
	}
	var ix printparse.ChildIndex // pairs below a list of many layers: not a scan per pair
	for _, p := range pairs {
		held[npuSide][p.NPU], held[benchSide][p.Bench] = true, true
		if n := ix.Lookup(npu.Root, p.NPU); n != nil && !resolve.HasDumpEntry(npu, n) {
			c.Containers++
		}
	}
	side := func(t *printparse.Tree, s side) SideCounts {
		var sc SideCounts
		if t.Root == nil {
			return sc
		}
		t.Root.Walk(func(n *printparse.Node) bool {
			if n.None {
				return false
			}
			if !resolve.HasDumpEntry(t, n) {
				return true
			}
			sc.Modules++
			switch {
			case held[s][n.Path]:
				sc.Paired++
			case parts[s][n.Path]:
				sc.Parts++
			}
			return true
		})
		sc.Unmatched = sc.Modules - sc.Paired
		return sc
	}
	c.NPU, c.Bench = side(npu, npuSide), side(bench, benchSide)
	return c
}

// groupParts are, per side, the paths of the modules of the alignment's
// N:1 groups: the fused module and its parts.
func (al *alignment) groupParts() [2]map[string]bool {
	out := [2]map[string]bool{{}, {}}
	for _, g := range al.groups() {
		out[g.one][g.whole.Path] = true
		for _, x := range g.members {
			out[g.one.other()][x.Path] = true
		}
	}
	return out
}
