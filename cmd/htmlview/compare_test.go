package htmlview_test

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/layermap/layermap/cmd/htmlview"
	"github.com/layermap/layermap/printparse/testkit"
)

// The compare view of the demo dumps (a corpus pair) with suggest's draft:
// module pairs from the table, colours by output rows, API rows under the
// module that calls them, the first divergence on both sides.
func TestFromCompare(t *testing.T) {
	n, b := testkit.Testdata(t, "demo", "dumps/llamafactory"), testkit.Testdata(t, "demo", "dumps/mindspeed-mm")
	v, _ := compareView(t, n, b, draft(t, n, b))
	pairs := map[string]string{}
	for _, p := range v.Pairs {
		pairs[p.NPU[0].Path] = p.Bench[0].Path
	}
	for npu, bench := range map[string]string{
		"module.visual.blocks.1.norm2":           "0.module.module.image_encoder.encoder.blocks.layers.1.pre_mlp_layernorm",
		"module.model.layers.0.self_attn.o_proj": "0.module.module.text_decoder.decoder.layers.0.self_attention.linear_proj",
		"":                                       "",
	} {
		if pairs[npu] != bench {
			t.Errorf("%s paired with %q, want %s", npu, pairs[npu], bench)
		}
	}
	if _, ok := pairs["module.model.layers.0.self_attn.q_proj"]; ok {
		t.Error("q_proj has no bench row (linear_qkv fuses it), yet it is paired")
	}
	norm2 := v.NPU.Lookup("module.visual.blocks.1.norm2")
	// the classified first divergence: the patch embedding's projection
	// (inputs agree, weights and outputs do not)
	proj := v.NPU.Lookup("module.visual.patch_embed.proj")
	f := v.Summary.First
	if f == nil || f.NPU != proj || f.Bench == nil || f.Bench.Path != pairs[proj.Path] || f.NPUEntry != "Module.module.visual.patch_embed.proj.Conv3d.forward.0" ||
		len(f.Messages) == 0 || !strings.HasPrefix(f.Messages[0], "forward, root cause: ") {
		t.Fatalf("first divergence %+v, want the root cause %s", f, proj.Path)
	}
	if v.NPU.Result[norm2] != htmlview.Pass || v.NPU.Inner[norm2] != htmlview.Error {
		t.Errorf("norm2: result %d, inner %d; want pass (its outputs agree) and error inside (Tensor.mean)", v.NPU.Result[norm2], v.NPU.Inner[norm2])
	}
	var own, api int
	for _, r := range v.Table.Rows[norm2] {
		if r.API {
			api++
			continue
		}
		own++
		if !strings.HasPrefix(r.Cells[0], "Module.module.visual.blocks.1.norm2.") {
			t.Errorf("row %s listed under norm2", r.Cells[0])
		}
	}
	if own == 0 || api == 0 {
		t.Errorf("norm2 has %d own and %d API rows, want both", own, api)
	}
	for _, h := range v.Table.Header {
		if h == "NPU_Stack_Info" {
			t.Error("the stack column is kept (the table file has it)")
		}
	}
	if v.Bench.Result[f.Bench] != v.NPU.Result[norm2] {
		t.Error("the bench module does not show its NPU partner's result")
	}
}

// A fused pair is drawn N:1: infer pairs linear_fc1 with up_proj and names
// gate_proj in the note; gate_proj joins the pair.
func TestFromSuggestFused(t *testing.T) {
	n, b := testkit.Testdata(t, "demo", "dumps", "llamafactory"), testkit.Testdata(t, "demo", "dumps", "mindspeed-mm")
	v := suggestView(t, n, b)
	var got []string
	for _, p := range v.Pairs {
		if p.Bench[0].Path == "0.module.module.text_decoder.decoder.layers.0.mlp.linear_fc1" {
			for _, a := range p.NPU {
				got = append(got, a.Path)
			}
			if p.Kind != htmlview.Fused {
				t.Errorf("kind %s, want fused", p.Kind)
			}
		}
	}
	if want := "module.model.layers.0.mlp.up_proj module.model.layers.0.mlp.gate_proj"; strings.Join(got, " ") != want {
		t.Errorf("linear_fc1 paired with %v, want %s", got, want)
	}
	if why := v.NPU.Why[v.NPU.Lookup("module.model.layers.0.mlp.gate_proj")]; why != "" {
		t.Errorf("gate_proj is in a pair but still has a why: %q", why)
	}
}

// A page whose table is over the budget keeps every warning and error
// row before any pass row, and of each module its first rows of each
// kind; it counts what it left out, and the colours stay those of the
// whole table.
func TestCompareBudget(t *testing.T) {
	n, b := testkit.Testdata(t, "demo", "dumps/llamafactory"), testkit.Testdata(t, "demo", "dumps/mindspeed-mm")
	full, _ := compareView(t, n, b, "")
	cut, _ := compareRun(t, n, b, "", compareOpts{budget: 40_000})
	all, kept := 0, 0
	for _, rows := range full.Table.Rows {
		all += len(rows)
	}
	for _, rows := range cut.Table.Rows {
		kept += len(rows)
	}
	if full.Table.Note != "" || full.Table.Total != nil {
		t.Errorf("the whole table fits the default budget, yet the page says %q", full.Table.Note)
	}
	if kept == 0 || kept >= all/2 {
		t.Fatalf("kept %d of %d rows with a 40 kB budget", kept, all)
	}
	if want := fmt.Sprintf("%d of %d table rows are on this page", kept, all); !strings.HasPrefix(cut.Table.Note, want) {
		t.Errorf("note %q, want it to start %q", cut.Table.Note, want)
	}
	passKept := false
	for _, rows := range cut.Table.Rows {
		for _, r := range rows {
			passKept = passKept || r.Result < htmlview.Warning
		}
	}
	for node, rows := range full.Table.Rows {
		mine := cut.NPU.Lookup(node.Path)
		got := cut.Table.Rows[mine]
		if total, ok := cut.Table.Total[mine]; ok != (len(got) < len(rows)) || ok && total != len(rows) {
			t.Errorf("%s: %d of %d rows kept, total %d (%v)", node.Path, len(got), len(rows), total, ok)
		}
		// each kind (warning/error, the rest) keeps a prefix of its rows
		for _, bad := range []bool{true, false} {
			var w, g []string
			for _, r := range rows {
				if (r.Result >= htmlview.Warning) == bad {
					w = append(w, strings.Join(r.Cells, ","))
				}
			}
			for _, r := range got {
				if (r.Result >= htmlview.Warning) == bad {
					g = append(g, strings.Join(r.Cells, ","))
				}
			}
			if !slices.Equal(g, w[:len(g)]) {
				t.Errorf("%s: the rows kept are not the first ones", node.Path)
			}
			if bad && passKept && len(g) < len(w) {
				t.Errorf("%s: a warning or error row left out while pass rows are kept", node.Path)
			}
		}
	}
	for node, r := range full.NPU.Result {
		if cut.NPU.Result[cut.NPU.Lookup(node.Path)] != r {
			t.Errorf("%s: result changes with the budget", node.Path)
		}
	}
}

// The same table gives the same page: the modules some of whose rows
// were left out are listed in order, not in a map's.
func TestCompareBudgetSamePage(t *testing.T) {
	n, b := testkit.Testdata(t, "demo", "dumps/llamafactory"), testkit.Testdata(t, "demo", "dumps/mindspeed-mm")
	stamp := regexp.MustCompile(`compare_result_[0-9]+`)
	var pages [2]string
	for i := range pages {
		v, page := compareRun(t, n, b, "", compareOpts{budget: 40_000})
		if len(v.Table.Total) < 5 {
			t.Fatalf("%d modules cut: too few to tell an order", len(v.Table.Total))
		}
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		pages[i] = stamp.ReplaceAllString(string(data), "compare_result_TS")
	}
	if pages[0] != pages[1] {
		t.Error("two runs on the same dumps wrote different pages")
	}
}

// An XLSX table reaches the page as cells, a CSV table as lines: the same
// page either way.
func TestCompareXLSXSameView(t *testing.T) {
	n, b := testkit.Testdata(t, "demo", "dumps/llamafactory"), testkit.Testdata(t, "demo", "dumps/mindspeed-mm")
	csvView, _ := compareView(t, n, b, "")
	xlsxView, _ := compareRun(t, n, b, "", compareOpts{xlsx: true})
	rows := 0
	for node, want := range csvView.Table.Rows {
		got := xlsxView.Table.Rows[xlsxView.NPU.Lookup(node.Path)]
		rows += len(want)
		if len(got) != len(want) {
			t.Fatalf("%s: %d rows from the XLSX table, %d from the CSV", node.Path, len(got), len(want))
		}
		for i := range want {
			if !slices.Equal(got[i].Cells, want[i].Cells) || got[i].Result != want[i].Result || got[i].API != want[i].API {
				t.Errorf("%s row %d: %v, want %v", node.Path, i, got[i], want[i])
			}
		}
	}
	if rows == 0 || len(xlsxView.Pairs) != len(csvView.Pairs) {
		t.Errorf("%d rows, %d and %d pairs", rows, len(xlsxView.Pairs), len(csvView.Pairs))
	}
}
