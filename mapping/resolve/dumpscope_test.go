package resolve

import (
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/msprobe"
	"github.com/layermap/layermap/printparse/testkit"
)

// synth builds a DumpInput from "name <- parent" lines (parent "" = top
// level) with a new-format stack.json (no stack entries), like the synthetic
// fixtures of msprobe-layer-mapping-detail.md §14.
func synth(lines ...string) DumpInput {
	in := DumpInput{Source: "synthetic", Framework: "pytorch"}
	construct := map[string]string{}
	var names []string
	for _, l := range lines {
		name, parent, _ := strings.Cut(l, " <- ")
		names = append(names, name)
		construct[name] = parent
	}
	in.Names, in.Parents = msprobe.NamesOf(names), msprobe.NewParentIndex(construct)
	return in
}

func apiMappingOf(t *testing.T, yamlText string, npu, bench DumpInput) map[string]string {
	t.Helper()
	var m *mapping.Mapping
	if yamlText != "" {
		var err error
		if m, _, err = mapping.Parse([]byte(yamlText), "s.yaml"); err != nil {
			t.Fatal(err)
		}
	}
	ni, err := ItemsFromDump(npu)
	if err != nil {
		t.Fatal(err)
	}
	bi, err := ItemsFromDump(bench)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range APIMapping(m, TrieFromItems("npu", ni), TrieFromItems("bench", bi)) {
		out[p.NPU] = p.Bench
	}
	return out
}

func checkMap(t *testing.T, got, want map[string]string) {
	t.Helper()
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s -> %q, want %q", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d pairs, want %d", len(got), len(want))
	}
}

// S1 (detail §14, §10.1): Qwen2.5-VL-like, the shared TransformerLayer class.
func TestSyntheticQwenVLShared(t *testing.T) {
	const np = "Module.0.module.module."
	vl := np + "image_encoder.encoder.blocks.layers.0."
	tl := np + "text_decoder.decoder.layers.0."
	npu := synth(
		"Module.0.module.Float16Module.forward.0 <- ",
		np+"image_encoder.VisionModel.forward.0 <- Module.0.module.Float16Module.forward.0",
		vl+"TransformerLayer.forward.0 <- "+np+"image_encoder.VisionModel.forward.0",
		vl+"self_attention.Qwen2vlVitSelfAttention.forward.0 <- "+vl+"TransformerLayer.forward.0",
		vl+"mlp.MLP.forward.0 <- "+vl+"TransformerLayer.forward.0",
		vl+"mlp.linear_fc1.ColumnParallelLinear.forward.0 <- "+vl+"mlp.MLP.forward.0",
		np+"text_decoder.MMGPTModel.forward.0 <- Module.0.module.Float16Module.forward.0",
		tl+"TransformerLayer.forward.0 <- "+np+"text_decoder.MMGPTModel.forward.0",
		tl+"self_attention.SelfAttention.forward.0 <- "+tl+"TransformerLayer.forward.0",
		"Torch.matmul.0.forward <- "+tl+"self_attention.SelfAttention.forward.0",
		tl+"mlp.MLP.forward.0 <- "+tl+"TransformerLayer.forward.0",
		tl+"mlp.linear_fc1.ColumnParallelLinear.forward.0 <- "+tl+"mlp.MLP.forward.0",
	)
	const bp = "Module.module."
	bench := synth(
		bp+"Qwen2_5_VLForConditionalGeneration.forward.0 <- ",
		bp+"visual.Qwen2_5_VisionTransformerPretrainedModel.forward.0 <- "+bp+"Qwen2_5_VLForConditionalGeneration.forward.0",
		bp+"visual.blocks.0.Qwen2_5_VLVisionBlock.forward.0 <- "+bp+"visual.Qwen2_5_VisionTransformerPretrainedModel.forward.0",
		bp+"visual.blocks.0.attn.Qwen2_5_VLVisionSdpaAttention.forward.0 <- "+bp+"visual.blocks.0.Qwen2_5_VLVisionBlock.forward.0",
		bp+"visual.blocks.0.mlp.Qwen2_5_VLMLP.forward.0 <- "+bp+"visual.blocks.0.Qwen2_5_VLVisionBlock.forward.0",
		bp+"visual.blocks.0.mlp.up_proj.Linear.forward.0 <- "+bp+"visual.blocks.0.mlp.Qwen2_5_VLMLP.forward.0",
		bp+"model.Qwen2_5_VLModel.forward.0 <- "+bp+"Qwen2_5_VLForConditionalGeneration.forward.0",
		bp+"model.layers.0.Qwen2_5_VLDecoderLayer.forward.0 <- "+bp+"model.Qwen2_5_VLModel.forward.0",
		bp+"model.layers.0.self_attn.Qwen2_5_VLSdpaAttention.forward.0 <- "+bp+"model.layers.0.Qwen2_5_VLDecoderLayer.forward.0",
		"Torch.matmul.0.forward <- "+bp+"model.layers.0.self_attn.Qwen2_5_VLSdpaAttention.forward.0",
		bp+"model.layers.0.mlp.Qwen2MLP.forward.0 <- "+bp+"model.layers.0.Qwen2_5_VLDecoderLayer.forward.0",
		bp+"model.layers.0.mlp.up_proj.Linear.forward.0 <- "+bp+"model.layers.0.mlp.Qwen2MLP.forward.0",
	)
	base := "TopLayer: {0.module: module}\nFloat16Module: {module.image_encoder: visual, module.text_decoder: model}\n" +
		"VisionModel: {encoder.blocks.layers: blocks}\nMLP: {linear_fc1: up_proj, linear_fc2: down_proj}\n"
	one := base + "TransformerLayer: {input_layernorm: norm1, self_attention: attn, pre_mlp_layernorm: norm2}\nMMGPTModel: {decoder.layers: layers}\n"
	want := map[string]string{}
	for i, n := range npu.Names.Strings() {
		want[n] = bench.Names.At(i)
	}
	t.Run("one TransformerLayer block", func(t *testing.T) {
		w := copyMap(want)
		w[tl+"self_attention.SelfAttention.forward.0"] = NA
		w["Torch.matmul.0.forward"] = NA
		checkMap(t, apiMappingOf(t, one, npu, bench), w)
	})
	t.Run("second block wins", func(t *testing.T) {
		w := copyMap(want)
		w[vl+"self_attention.Qwen2vlVitSelfAttention.forward.0"] = NA
		checkMap(t, apiMappingOf(t, one+"TransformerLayer: {self_attention: self_attn}\n", npu, bench), w)
	})
	t.Run("ancestor key workaround", func(t *testing.T) {
		y := base + "TransformerLayer: {input_layernorm: norm1, self_attention: attn, pre_mlp_layernorm: norm2}\n" +
			"MMGPTModel: {decoder.layers: layers, decoder.layers.0.self_attention: layers.0.self_attn}\n"
		checkMap(t, apiMappingOf(t, y, npu, bench), want)
	})
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// checkSharedScopes fails unless the items of one full scope hold one
// string, and the trie built of them puts them at one node, numbered in
// order.
func checkSharedScopes(t *testing.T, items []*Item) {
	t.Helper()
	first := map[string]*Item{}
	for _, it := range items {
		if f, ok := first[it.FullScope]; ok && unsafe.StringData(f.FullScope) != unsafe.StringData(it.FullScope) {
			t.Errorf("%s and %s: full scope %q held twice", f.Name, it.Name, it.FullScope)
		} else if !ok {
			first[it.FullScope] = it
		}
	}
	tr := TrieFromItems("t", items)
	nodes := map[string]*TrieNode{}
	ords := map[string]int{}
	for _, it := range tr.Items() {
		if n, ok := nodes[it.FullScope]; ok && n != it.node {
			t.Errorf("%s: full scope %q at two nodes", it.Name, it.FullScope)
		}
		nodes[it.FullScope] = it.node
		k := it.FullScope + " " + it.State
		if it.ord != ords[k] {
			t.Errorf("%s: ordinal %d, want %d", it.Name, it.ord, ords[k])
		}
		ords[k]++
	}
}

// TestTrieScopesByContent: items whose equal full scopes are distinct
// strings still share one node, numbered in order.
func TestTrieScopesByContent(t *testing.T) {
	var items []*Item
	for i := range 6 {
		scope := strings.Join([]string{"Module", "a", "b"}, ".")
		if i%2 == 1 {
			scope = strings.Join([]string{"Module", "a", "c"}, ".")
		}
		items = append(items, &Item{Name: fmt.Sprintf("Tensor.add.%d.forward", i), State: "forward", Type: "add", FullScope: scope})
	}
	tr := TrieFromItems("t", items)
	for i, it := range tr.Items() {
		if it.node != tr.Items()[i%2].node || it.ord != i/2 {
			t.Errorf("%s: node %p ordinal %d, want %p and %d", it.Name, it.node, it.ord, tr.Items()[i%2].node, i/2)
		}
	}
}

// S2 (detail §5.2): pipeline-parallel layer rebasing under ParallelTransformer.
func TestSyntheticRenumber(t *testing.T) {
	mk := func(prefix string, pt bool, idx ...string) DumpInput {
		var lines []string
		ptName := prefix + ".net.encoder.ParallelTransformer.forward.0"
		if pt {
			lines = append(lines, ptName+" <- ")
		}
		for _, i := range idx {
			layer := prefix + ".net.encoder.layers." + i + ".ParallelTransformerLayer.forward.0"
			mlp := prefix + ".net.encoder.layers." + i + ".mlp.ParallelMLP.forward.0"
			lines = append(lines, layer+" <- "+ptName, mlp+" <- "+layer, "Torch.matmul."+i+".forward <- "+mlp)
		}
		return synth(lines...)
	}
	bench := mk("Module", true, "0", "1")
	got := apiMappingOf(t, "", mk("Cell", true, "4", "5"), bench)
	checkMap(t, got, map[string]string{
		"Cell.net.encoder.ParallelTransformer.forward.0":               "Module.net.encoder.ParallelTransformer.forward.0",
		"Cell.net.encoder.layers.4.ParallelTransformerLayer.forward.0": "Module.net.encoder.layers.0.ParallelTransformerLayer.forward.0",
		"Cell.net.encoder.layers.4.mlp.ParallelMLP.forward.0":          "Module.net.encoder.layers.0.mlp.ParallelMLP.forward.0",
		"Torch.matmul.4.forward":                                       "Torch.matmul.0.forward",
		"Cell.net.encoder.layers.5.ParallelTransformerLayer.forward.0": "Module.net.encoder.layers.1.ParallelTransformerLayer.forward.0",
		"Cell.net.encoder.layers.5.mlp.ParallelMLP.forward.0":          "Module.net.encoder.layers.1.mlp.ParallelMLP.forward.0",
		"Torch.matmul.5.forward":                                       "Torch.matmul.1.forward",
	})
	// Rebased scopes are shared as the others are: one string and one
	// node per distinct scope.
	items, err := ItemsFromDump(mk("Cell", true, "4", "5", "4", "5"))
	if err != nil {
		t.Fatal(err)
	}
	checkSharedScopes(t, items)
	// Without the ParallelTransformer entry nothing is rebased: all N/A.
	for k, v := range apiMappingOf(t, "", mk("Cell", false, "4", "5"), bench) {
		if v != NA {
			t.Errorf("without ParallelTransformer: %s -> %s, want N/A", k, v)
		}
	}
}

// S3 (detail §6.2): a container without a dump entry is typed by its
// segment name.
func TestSyntheticClassVisibility(t *testing.T) {
	parent := "Module.lm.embedding.Embedding.forward.0"
	npu := synth("Module.lm.embedding.word_embeddings.VocabParallelEmbedding.forward.0 <- "+parent,
		"Module.lm.embedding.dropout.Dropout.forward.0 <- "+parent)
	bench := synth("Module.lm.embedding.word_embeddings.VocabParallelEmbedding.forward.0 <- "+parent,
		"Module.lm.embedding.embedding_dropout.Dropout.forward.0 <- "+parent)
	drop := "Module.lm.embedding.dropout.Dropout.forward.0"
	if got := apiMappingOf(t, "Embedding: {dropout: embedding_dropout}\n", npu, bench)[drop]; got != NA {
		t.Errorf("class key: %s -> %s, want N/A", drop, got)
	}
	if got := apiMappingOf(t, "embedding: {dropout: embedding_dropout}\n", npu, bench)[drop]; got != "Module.lm.embedding.embedding_dropout.Dropout.forward.0" {
		t.Errorf("segment key: %s -> %s", drop, got)
	}
}

// S4 (detail §14): ordinal matching per state, call indices ignored.
func TestSyntheticOrdinals(t *testing.T) {
	npu := synth("Module.blk.Linear.forward.0 <- ", "Module.blk.Linear.forward.1 <- ", "Module.blk.Linear.forward.2 <- ",
		"Tensor.add.3.forward <- Module.blk.Linear.forward.0", "Tensor.add.7.forward <- Module.blk.Linear.forward.1",
		"Module.blk.Linear.backward.0 <- ", "Tensor.add.3.backward <- Module.blk.Linear.backward.0")
	bench := synth("Module.blk.Linear.forward.5 <- ", "Module.blk.Linear.forward.6 <- ",
		"Tensor.add.0.forward <- Module.blk.Linear.forward.5", "Tensor.add.1.forward <- Module.blk.Linear.forward.6",
		"Module.blk.Linear.backward.5 <- ", "Tensor.add.0.backward <- Module.blk.Linear.backward.5")
	checkMap(t, apiMappingOf(t, "", npu, bench), map[string]string{
		"Module.blk.Linear.forward.0": "Module.blk.Linear.forward.5", "Module.blk.Linear.forward.1": "Module.blk.Linear.forward.6",
		"Module.blk.Linear.forward.2": NA, "Tensor.add.3.forward": "Tensor.add.0.forward", "Tensor.add.7.forward": "Tensor.add.1.forward",
		"Module.blk.Linear.backward.0": "Module.blk.Linear.backward.5", "Tensor.add.3.backward": "Tensor.add.0.backward",
	})
}

// R1's NPU side parsed (detail §4.5 table).
func TestFullScopeR1(t *testing.T) {
	in, err := ReadDumpInput(testkit.Corpus(t, "msprobe/test/msprobe_test/mindspore_ut/compare/dump_file/mindspore_data"))
	if err != nil {
		t.Fatal(err)
	}
	items, err := ItemsFromDump(in)
	if err != nil {
		t.Fatal(err)
	}
	const l = "Cell.network_with_loss.module.language_model"
	want := []struct{ typ, state, scope string }{
		{"__add__", "forward", "TopLayer.__getitem__.__add__"},
		{"__bool__", "forward", "TopLayer.__bool__"},
		{"__add__", "forward", "TopLayer.__add__"},
		{"logical_or", "forward", l + ".embedding.word_embeddings.logical_or"},
		{"all_reduce", "forward", l + ".embedding.word_embeddings.reduce_from_mp_region.all_reduce"},
		{"VocabParallelEmbedding", "forward", l + ".embedding.word_embeddings"},
		{"RmsNorm", "forward", l + ".encoder.layers.0.input_norm.RmsNorm"},
		{"ParallelTransformerLayer", "forward", l + ".encoder.layers.0"},
		{"FusedRMSNorm", "backward", l + ".encoder.layers.0.input_norm"},
		{"ParallelAttention", "forward", l + ".encoder.layers.0.attention"},
		{"cos", "forward", l + ".encoder.layers.0.attention.cos"},
		{"flash_attention_score", "forward", l + ".encoder.layers.0.attention.flash_attention_score"},
		{"flash_attention_score", "backward", l + ".encoder.layers.0.attention.flash_attention_score"},
	}
	if len(items) != len(want) {
		t.Fatalf("%d items, want %d", len(items), len(want))
	}
	for i, w := range want {
		it := items[i]
		if it.Type != w.typ || it.State != w.state || it.FullScope != w.scope {
			t.Errorf("%s: (%s, %s, %s), want (%s, %s, %s)", it.Name, it.Type, it.State, it.FullScope, w.typ, w.state, w.scope)
		}
	}
}

func TestDumpNameErrors(t *testing.T) {
	tests := []struct {
		in   DumpInput
		want string
	}{
		{synth("Tensor.add.0 <- "), `expected an entry name of at least four '.'-separated fields (msprobe refuses it), found "Tensor.add.0"`},
		{synth("Tensor.add.0.forward <- Module.x.forward"), `expected a parent name of at least four '.'-separated fields (msprobe refuses it), found "Module.x.forward" as the parent of "Tensor.add.0.forward"`},
	}
	for _, tc := range tests {
		_, err := ItemsFromDump(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
	// Read from a folder, the refusals name the file and the line.
	dir := t.TempDir()
	for name, body := range map[string]string{
		"dump.json":      "{\"task\": \"statistics\", \"level\": \"mix\", \"framework\": \"pytorch\", \"data\": {\n\"Tensor.add.0.forward\": {},\n\"Tensor.add.0\": {}}}",
		"construct.json": "{\"Tensor.add.0.forward\": null}",
		"stack.json":     "{\"Tensor.add.0.forward\": []}",
	} {
		os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644)
	}
	if _, err := TrieFromDump(dir); err == nil || err.Error() != filepath.Join(dir, "dump.json")+`:3: expected an entry name of at least four '.'-separated fields (msprobe refuses it), found "Tensor.add.0"` {
		t.Errorf("from a folder: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "dump.json"), []byte("{\"framework\": \"pytorch\", \"data\": {\"Tensor.add.0.forward\": {}}}"), 0o644)
	os.WriteFile(filepath.Join(dir, "construct.json"), []byte("{\n\"x\": null,\n\"Tensor.add.0.forward\": \"Module.x.forward\"}"), 0o644)
	if _, err := TrieFromDump(dir); err == nil || !strings.HasPrefix(err.Error(), filepath.Join(dir, "construct.json")+`:3: expected a parent name`) {
		t.Errorf("from a folder: %v", err)
	}
	// Both params-grad forms (detail §4.1, §10.5).
	items, err := ItemsFromDump(synth("Module.enc.fc1.Linear.parameters_grad <- ", "Module.enc.fc2.Linear.parameters_grad.0 <- "))
	if err != nil {
		t.Fatal(err)
	}
	if items[0].FullScope != "Module.enc.fc1" || items[1].FullScope != "Module.enc.fc2.fc2" || items[1].State != StateParamsGrad {
		t.Errorf("params grad scopes %q %q", items[0].FullScope, items[1].FullScope)
	}
	// No items when construct.json is empty (an L1 dump).
	in := synth("Tensor.add.0.forward <- ")
	in.ConstructEmpty = true
	if items, _ := ItemsFromDump(in); len(items) != 0 {
		t.Errorf("empty construct gave %d items", len(items))
	}
}

// R3: test_postprocess_pass.py cases.
func TestRenumberPassUnit(t *testing.T) {
	// the first item is the ParallelTransformer
	scopes := []string{"fake_data", "fake_data.layers.10", "fake_data.layers.12", "fake_data.layers.10.a.b.c", "other.layers.7"}
	c := newScopeCache()
	d := &dumpItems{}
	for _, s := range scopes {
		d.entries = append(d.entries, dumpEntry{scope: c.fullScope(s)})
	}
	d.renumberPass([]int32{0}, "layers", c)
	want := []string{"fake_data", "fake_data.layers.0", "fake_data.layers.2", "fake_data.layers.0.a.b.c", "other.layers.7"}
	for i, w := range want {
		if got := c.scopes[d.entries[i].scope]; got != w {
			t.Errorf("item %d: %q, want %q", i, got, w)
		}
	}
	// extract_next_item_last_number("conv1.Conv2d.forward.input.conv1", "conv1") == 2
	re := regexp.MustCompile(`^` + regexp.QuoteMeta("conv1") + `\.(\S+?)(?:\.|$)`)
	if v, _, _ := nextNumber(re, "conv1.Conv2d.forward.input.conv1"); v != 2 {
		t.Errorf("next number = %v, want 2", v)
	}
	if v, _, ok := nextNumber(re, "conv2.x"); ok || !math.IsInf(v, 1) {
		t.Errorf("no match gave %v %v", v, ok)
	}
}

// S7 (detail §14): the example of msprobe's layer_mapping_example.md: every
// node maps to its GPU counterpart except the extra NPU level
// TransformerLanguageModel.
func TestSyntheticDocExample(t *testing.T) {
	const f, g, l = "Module.module.Float16Module.forward.0", "Module.module.module.GPTModel.forward.0", "Module.module.module.language_model."
	tlm := l + "TransformerLanguageModel.forward.0"
	npu := synth(f+" <- ", g+" <- "+f, tlm+" <- "+g,
		l+"embedding.Embedding.forward.0 <- "+tlm, l+"rotary_pos_emb.RotaryEmbedding.forward.0 <- "+tlm,
		l+"encoder.ParallelTransformer.forward.0 <- "+tlm,
		l+"encoder.layers.0.ParallelTransformerLayer.forward.0 <- "+l+"encoder.ParallelTransformer.forward.0",
		l+"encoder.layers.0.mlp.ParallelMLP.forward.0 <- "+l+"encoder.layers.0.ParallelTransformerLayer.forward.0",
		l+"encoder.layers.0.mlp.dense_h_to_4h.ColumnParallelLinear.forward.0 <- "+l+"encoder.layers.0.mlp.ParallelMLP.forward.0")
	const gf, gg, gm = "Module.model.FloatModule.forward.0", "Module.model.module.GPT2Model.forward.0", "Module.model.module."
	bench := synth(gf+" <- ", gg+" <- "+gf, gm+"embedding.LanguageModelEmbedding.forward.0 <- "+gg,
		gm+"rotary_pos_emb.RotaryEmbedding.forward.0 <- "+gg, gm+"decoder.TransformerBlock.forward.0 <- "+gg,
		gm+"decoder.layers.0.TransformerLayer.forward.0 <- "+gm+"decoder.TransformerBlock.forward.0",
		gm+"decoder.layers.0.mlp.MLP.forward.0 <- "+gm+"decoder.layers.0.TransformerLayer.forward.0",
		gm+"decoder.layers.0.mlp.linear_fc1.ColumnParallelLinear.forward.0 <- "+gm+"decoder.layers.0.mlp.MLP.forward.0")
	y := "TopLayer: {module: model}\nGPTModel: {language_model.embedding: embedding, language_model.rotary_pos_emb: rotary_pos_emb, language_model.encoder: decoder}\n" +
		"ParallelMLP: {dense_h_to_4h: linear_fc1, dense_4h_to_h: linear_fc2}\n"
	want := map[string]string{tlm: NA}
	bi := 0
	for _, n := range npu.Names.Strings() {
		if n == tlm {
			continue
		}
		want[n] = bench.Names.At(bi)
		bi++
	}
	checkMap(t, apiMappingOf(t, y, npu, bench), want)
}

// FuzzDumpScope feeds arbitrary entry names, parents and stack frames to
// msprobe's dump-name parser and the trie: it must return an error or items
// whose scope the trie and the resolver accept, never panic.
func FuzzDumpScope(f *testing.F) {
	f.Add("Module.0.module.Float16Module.forward.0", "", "File /x/site-packages/torch/a.py, line 1, in f, \n y")
	f.Add("Tensor.__add__.0.forward", "Module.a.b.C.forward.0", "File /p/site-packages/mindspore/tensor.py, line 4, in __getitem__, \n x")
	f.Add("Module.enc.fc2.Linear.parameters_grad.0", "", "")
	f.Add("Cell.net.encoder.layers.4.ParallelTransformerLayer.backward.0", "Cell.net.encoder.ParallelTransformer.forward.0", "Template")
	f.Add("a.b", "x.y", "File")
	f.Add("Module.add.Add.forward.0", "", "")
	f.Fuzz(func(t *testing.T, name, parent, frame string) {
		in := DumpInput{Source: "fuzz", Framework: "pytorch", Parents: msprobe.NewParentIndex(map[string]string{name: parent, "Tensor.add.0.forward": name}),
			Names: msprobe.NamesOf([]string{name, "Tensor.add.0.forward", "Module.x.ParallelTransformer.forward.0"}),
			Stack: map[string]StackEntry{name: {Frames: []string{"Template", frame, frame}, Valid: true}}}
		items, err := ItemsFromDump(in)
		if err != nil {
			return
		}
		tr := TrieFromItems("fuzz", items)
		d, err := parseDump(in)
		if err != nil {
			t.Fatalf("ItemsFromDump: no error; parseDump: %v", err)
		}
		sameTrie(t, trieOfDump("fuzz", d), tr)
		for i, want := range refFullScopes(t, in) {
			if items[i].FullScope != want {
				t.Fatalf("%s: full scope %q, want %q", items[i].Name, items[i].FullScope, want)
			}
		}
		r := New(nil)
		for _, it := range items {
			if b, _ := r.Resolve(tr, tr, it); b == nil {
				// against itself with no rules every item finds itself
				t.Fatalf("%q (scope %q) does not resolve onto itself", it.Name, it.FullScope)
			}
		}
	})
}

// TestDumpTrieCorpus: on every dump folder of testdata, the dump trie
// ReadSides builds is the one TrieFromItems builds of ItemsFromDump's
// items.
func TestDumpTrieCorpus(t *testing.T) {
	t.Parallel()
	items := 0
	for dir, in := range testdataDumps(t) {
		general, err := ItemsFromDump(in)
		if err != nil {
			continue
		}
		got, err := trieFromInput(in)
		if err != nil {
			t.Fatalf("%s: ItemsFromDump: no error; trieFromInput: %v", dir, err)
		}
		rel, _ := filepath.Rel(testkit.Testdata(t), dir)
		t.Run(rel, func(t *testing.T) { sameTrie(t, got, TrieFromItems(in.Source, general)) })
		items += len(general)
	}
	if items < 1000 {
		t.Errorf("%d items in the corpus' dump folders, want 1000 or more", items)
	}
}

// TestDumpTrieSharedNode: full scopes that differ in their first segment
// ("TopLayer.add" of an API called outside any module, "Module.add" of a
// module called add) share a node, whose type is its last item's
// whichever scope that item has, also where backward items took their
// forward twin's scope and layers were rebased (the passes themselves:
// TestPassesLikeReference).
func TestDumpTrieSharedNode(t *testing.T) {
	t.Parallel()
	const pt = "Module.enc.ParallelTransformer.forward.0"
	for _, names := range [][]string{
		{"Tensor.add.0.forward <- ", "Module.add.Add.forward.0 <- ", "Tensor.add.1.forward <- "},
		{"Module.add.Add.forward.0 <- ", "Tensor.add.0.forward <- ", "Module.add.Add.forward.1 <- "},
		{"Module.add.Add.forward.0 <- ", "Tensor.add.0.forward <- ", "Tensor.add.0.backward <- ", "Module.add.Add.backward.0 <- "},
		{pt + " <- ", "Module.enc.layers.3.L.forward.0 <- " + pt, "Module.enc.layers.4.L.forward.0 <- " + pt, "Tensor.mul.0.forward <- Module.enc.layers.4.L.forward.0", "Module.enc.layers.3.L.backward.0 <- "},
	} {
		in := synth(names...)
		items, err := ItemsFromDump(in)
		if err != nil {
			t.Fatal(err)
		}
		d, err := parseDump(in)
		if err != nil {
			t.Fatal(err)
		}
		sameTrie(t, trieOfDump("t", d), TrieFromItems("t", items))
	}
}

// TestBackwardPass: a backward item takes the full scope of its forward
// twin (the name with "backward" read as "forward" in its last two
// parts), where there is one (postprocess_pass.backward_pass).
func TestBackwardPass(t *testing.T) {
	t.Parallel()
	in := synth("Module.m.M.forward.0 <- ", "Tensor.add.0.forward <- Module.m.M.forward.0", "Tensor.add.0.backward <- ",
		"Tensor.mul.0.backward <- ", "Module.m.M.backward.0 <- ", "Tensor.sub.0.forward <- Module.m.M.forward.0", "Tensor.sub.0.backward <- Module.n.N.backward.0")
	items, err := ItemsFromDump(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Module.m", "Module.m.add", "Module.m.add", "TopLayer.mul", "Module.m", "Module.m.sub", "Module.m.sub"}
	for i, it := range items {
		if it.FullScope != want[i] {
			t.Errorf("%s: full scope %q, want %q", it.Name, it.FullScope, want[i])
		}
	}
}

// refFullScopes is msprobe's post-processing passes as written, on each
// item's full scope as a string (postprocess_pass.backward_pass, then
// renumber_index_pass for ParallelTransformer below "layers"): the
// reference parseDump's passes on distinct scopes must agree with.
func refFullScopes(t *testing.T, in DumpInput) []string {
	t.Helper()
	c := newScopeCache()
	names := in.Names.Strings()
	scopes := make([]string, len(names))
	for i, name := range names {
		id, _, err := parseDumpItem(in, i, name, c)
		if err != nil {
			t.Fatal(err)
		}
		scopes[i] = c.scopes[id]
	}
	byName := map[string]int{}
	for i, n := range names {
		byName[n] = i
	}
	for i, n := range names {
		if !backwardTail(n) {
			continue
		}
		p := strings.Split(n, ".")
		tail := p[max(0, len(p)-2):]
		for k := range tail {
			tail[k] = strings.ReplaceAll(tail[k], StateBackward, StateForward)
		}
		if fw, ok := byName[strings.Join(p, ".")]; ok {
			scopes[i] = scopes[fw]
		}
	}
	var prefixes []string
	for i, n := range names {
		if pre := scopes[i] + ".layers"; dumpName(n).typ == "ParallelTransformer" && !slices.Contains(prefixes, pre) {
			prefixes = append(prefixes, pre)
		}
	}
	for _, pre := range prefixes {
		re := regexp.MustCompile(`^` + regexp.QuoteMeta(pre) + `\.(\S+?)(?:\.|$)`)
		minIdx := math.Inf(1)
		for _, s := range scopes {
			if v, _, ok := nextNumber(re, s); ok {
				minIdx = math.Min(minIdx, v)
			}
		}
		for i, s := range scopes {
			v, next, ok := nextNumber(re, s)
			if rel := v - minIdx; ok && !math.IsInf(rel, 0) {
				idx := "nan"
				if !math.IsNaN(rel) {
					idx = strconv.FormatInt(int64(rel), 10)
				}
				scopes[i] = pre + "." + idx + s[len(pre)+1+len(next):]
			}
		}
	}
	return scopes
}

// TestPassesLikeReference: on random dumps (repeated names, backward
// twins, several ParallelTransformers, layer indexes from any number or
// none, modules and APIs on one node), the full scopes ItemsFromDump
// gives are refFullScopes'.
func TestPassesLikeReference(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	for range 2000 {
		var lines []string
		var mods []string
		for range 1 + rng.IntN(30) {
			parent := ""
			if len(mods) > 0 && rng.IntN(4) > 0 {
				parent = mods[rng.IntN(len(mods))]
			}
			dir := pick("forward", "backward")
			var name string
			switch rng.IntN(4) {
			case 0:
				name = fmt.Sprintf("Module.%s.%s.%s.%d", pick("enc", "enc.layers."+pick("3", "7", "12", "x", "1a2"), "dec.layers.0", "add"), pick("ParallelTransformer", "L", "Add"), dir, rng.IntN(2))
				mods = append(mods, name)
			case 1:
				name = fmt.Sprintf("%s.%s.%d.%s", pick("Tensor", "Functional", "Torch"), pick("add", "mul"), rng.IntN(3), dir)
			case 2:
				name = fmt.Sprintf("Module.%s.Linear.parameters_grad", pick("enc.layers.5", "a.b"))
			default:
				if len(lines) > 0 {
					name, _, _ = strings.Cut(lines[rng.IntN(len(lines))], " <- ") // a name again
				} else {
					name = "Tensor.add.0.forward"
				}
			}
			lines = append(lines, name+" <- "+parent)
		}
		in := synth(lines...)
		items, err := ItemsFromDump(in)
		if err != nil {
			t.Fatal(err)
		}
		want := refFullScopes(t, in)
		for i, it := range items {
			if it.FullScope != want[i] {
				t.Fatalf("%q: %s: full scope %q, want %q", lines, it.Name, it.FullScope, want[i])
			}
		}
	}
}

// sameTrie checks that a dump trie (trieOfDump) is the trie TrieFromItems
// builds of the same items: the same nodes in the same order, with the
// same types and items by state, and the same items.
func sameTrie(t *testing.T, got, want *Trie) {
	t.Helper()
	if got.Len() != want.Len() {
		t.Fatalf("%d items, want %d", got.Len(), want.Len())
	}
	for i := range want.Len() {
		g, w := got.Item(i), want.Item(i)
		if g.Name != w.Name || g.State != w.State || g.Type != w.Type || g.FullScope != w.FullScope || g.ord != w.ord || g.node.Path() != w.node.Path() {
			t.Fatalf("item %d: %+v at %q, want %+v at %q", i, *g, g.node.Path(), *w, w.node.Path())
		}
	}
	var walk func(g, w *TrieNode)
	walk = func(g, w *TrieNode) {
		if g.Segment != w.Segment || g.Type != w.Type || g.Typed != w.Typed || !slices.Equal(g.scope, w.scope) || !reflect.DeepEqual(g.items, w.items) {
			t.Fatalf("node %q: %q %q %v %q %v, want %q %q %v %q %v", w.Path(), g.Segment, g.Type, g.Typed, g.scope, g.items, w.Segment, w.Type, w.Typed, w.scope, w.items)
		}
		if len(g.Children) != len(w.Children) {
			t.Fatalf("node %q: %d children, want %d", w.Path(), len(g.Children), len(w.Children))
		}
		for k := range w.Children {
			walk(g.Children[k], w.Children[k])
		}
	}
	walk(got.Root, want.Root)
}

// FuzzReadDumpInput: any construct.json and stack.json beside a dump give
// the items or an error naming a file (with its line when the file is
// JSON it can place), never a panic.
func FuzzReadDumpInput(f *testing.F) {
	f.Add(`{"Tensor.add.0.forward": "Module.a.b.C.forward.0"}`, `{"Tensor.add.0.forward": ["File /x/site-packages/torch/a.py, line 1, in f", "g"]}`)
	f.Add(`{"Tensor.add.0.forward": null, "Tensor.add.0.forward": "x.y"}`, `{"Tensor.add.0.forward": 3}`)
	f.Add("{\"Tensor.add.0.forward\": \"\xff\"}", `[]`)
	f.Add(`{}`, `{} x`)
	dump := []byte(`{"task": "statistics", "level": "mix", "framework": "pytorch", "data": {"Tensor.add.0.forward": {}, "Module.a.b.C.forward.0": {}}}`)
	f.Fuzz(func(t *testing.T, construct, stack string) {
		dir := t.TempDir()
		for name, body := range map[string][]byte{"dump.json": dump, "construct.json": []byte(construct), "stack.json": []byte(stack)} {
			if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		in, err := ReadDumpInput(dir)
		if err == nil {
			_, err = ItemsFromDump(in)
		}
		if err != nil && !strings.Contains(err.Error(), dir) {
			t.Fatalf("error without its file: %v", err)
		}
	})
}

// head returns s without its last n elements (Python s[:-n]).
func head(s []string, n int) []string {
	if len(s) <= n {
		return nil
	}
	return s[:len(s)-n]
}

// TestLayerScopeFields: the layer scope taken as a prefix of the name (or
// of an API's parent) is msprobe's join of all fields but the API type and
// the last three (of the parent: but the last three).
func TestLayerScopeFields(t *testing.T) {
	join := func(name string, k int) string {
		p := strings.Split(name, ".")
		return strings.Join(head(p[:k], 0), ".")
	}
	names := []string{"a", "a.b", "a.b.c", "a.b.c.d", "Module.x.forward.0", "Module.a.b.Linear.forward.0", "x..y.", "..", "a..b.c.d", "...."}
	for _, name := range names {
		n := strings.Count(name, ".") + 1
		for k := 0; k <= n; k++ {
			if got, want := fieldsPrefix(name, k), join(name, k); got != want {
				t.Errorf("fieldsPrefix(%q, %d) = %q, want %q", name, k, got, want)
			}
		}
		// an API's parent (parseDumpItem)
		if got, want := fieldsPrefix(name, n-3), strings.Join(head(strings.Split(name, "."), 3), "."); got != want {
			t.Errorf("parent %q: layer scope %q, want %q", name, got, want)
		}
	}
	// msprobe's set_layer_scope, spelled as it is: the data fields less
	// the last three
	ref := func(name string) string {
		p := strings.Split(name, ".")
		n := len(p)
		var data []string
		apiName := p[n-4]
		switch {
		case p[n-1] == StateParamsGrad:
			data, apiName = p, p[n-3]
		case p[n-2] == StateParamsGrad:
			data = p
		default:
			data = append(append([]string{}, p[:n-4]...), p[n-3:]...)
		}
		return strings.Join(head(data, 3), ".") + "." + apiName
	}
	in := DumpInput{Source: "synthetic", Framework: "pytorch", Parents: msprobe.NewParentIndex(nil)}
	for _, name := range []string{"Module.m.forward.0", "Module.a.b.Linear.forward.0", "Module.a.Linear.parameters_grad",
		"Module.a.b.Linear.parameters_grad.0", "Module.x.y.parameters_grad", "Cell.net.layers.0.Dense.backward.3", "Module.a.b.c.d.E.forward.12"} {
		c := newScopeCache()
		id, _, err := parseDumpItem(in, 0, name, c)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := c.scopes[id], ref(name); got != want {
			t.Errorf("%s: full scope %q, want %q", name, got, want)
		}
	}
}

func TestNameFields(t *testing.T) {
	for _, name := range []string{"", "a", "a.b", "a.b.c", "a.b.c.d", "Module.a.b.Linear.forward.0", "..", "x..y.", ".a.b.c.d."} {
		p := strings.Split(name, ".")
		first, last, n := nameFields(name)
		if n != len(p) || first != p[0] {
			t.Errorf("%q: first %q n %d, want %q %d", name, first, n, p[0], len(p))
		}
		for k := 0; k < 4 && k < n; k++ {
			if last[k] != p[n-1-k] {
				t.Errorf("%q: last[%d] = %q, want %q", name, k, last[k], p[n-1-k])
			}
		}
	}
}

// TestDumpTreeLikeLoad: the module tree a mapped compare builds from the
// names it read (in place) is printparse.LoadDumpDir's, on every dump
// folder of testdata.
func TestDumpTreeLikeLoad(t *testing.T) {
	t.Parallel()
	trees := 0
	for dir, in := range testdataDumps(t) {
		want, werr := printparse.LoadDumpDir(dir)
		got, err := dumpTree(in)
		if (err == nil) != (werr == nil) {
			t.Fatalf("%s: dumpTree error %v, LoadDumpDir's %v", dir, err, werr)
		}
		if err != nil {
			continue
		}
		var g, w strings.Builder
		if err := printparse.Render(&g, got, printparse.RenderOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := printparse.Render(&w, want, printparse.RenderOptions{}); err != nil {
			t.Fatal(err)
		}
		if g.String() != w.String() || !reflect.DeepEqual(got.Warnings, want.Warnings) {
			t.Errorf("%s: dumpTree gives\n%s\nLoadDumpDir\n%s", dir, g.String(), w.String())
		}
		trees++
	}
	if trees < 5 {
		t.Errorf("%d trees compared, want 5 or more", trees)
	}
}

// testdataDumps yields every dump folder of testdata with construct.json
// that ReadDumpInput reads (the others are folders msprobe refuses,
// tested elsewhere), with what it reads.
func testdataDumps(t *testing.T) iter.Seq2[string, DumpInput] {
	files := append(testkit.FilesNamed(t, testkit.Testdata(t, "demo"), "construct.json", 2),
		testkit.FilesNamed(t, testkit.Testdata(t, "corpus"), "construct.json", 17)...)
	return func(yield func(string, DumpInput) bool) {
		for _, f := range files {
			dir := filepath.Dir(f)
			if in, err := ReadDumpInput(dir); err == nil && !yield(dir, in) {
				return
			}
		}
	}
}
