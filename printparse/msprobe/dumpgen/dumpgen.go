// Package dumpgen writes synthetic msprobe dump.json files that look like
// real ones (a decoder-only transformer dumped at level "mix": module and
// API entries, forward and backward, parameters and parameter gradients,
// tensors, scalars, None, slices, ellipsis), for benchmarks and load
// tests. The output is formatted as msprobe writes it (Python json.dump
// with indent=1, bare NaN/Infinity), so a reader sees the same byte
// patterns as in the field.
package dumpgen

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/layermap/layermap/printparse/msprobe"
)

// Options shape the generated dump.
type Options struct {
	// Seed fixes structure-independent random values; two dumps with the
	// same Seed and Layers have the same entries and the same base values.
	Seed uint64
	// Layers is the number of decoder layers (default 2). When TargetBytes
	// is set, layers are added until at least that many bytes are written.
	Layers      int
	TargetBytes int64
	// Hidden is the hidden size used in shapes (default 4096).
	Hidden int
	// Perturb, when non-zero, multiplies every statistic by
	// (1 + Perturb*N(0,1)) with noise drawn from a separate stream, so a
	// bench dump (Perturb > 0) stays aligned entry by entry with the NPU
	// dump of the same Seed (Perturb 0).
	Perturb float64
	// Diverge, when non-zero, adds a relative error of Diverge to every
	// statistic written from the output of decoder layer DivergeLayer on
	// (its inputs still agree), so that a comparison has a first
	// divergence: layer DivergeLayer's decoder module.
	Diverge      float64
	DivergeLayer int
	// Tensor writes a tensor-mode dump (task "tensor", data_name on every
	// tensor); MD5 adds an md5 to every tensor (statistics md5 mode):
	// with the same Seed, the NPU side's where the statistics are too
	// (neither Perturb nor Diverge applies).
	Tensor bool
	MD5    bool
	// Framework is written in the header (default "pytorch").
	Framework string
	// Foreach, when positive, adds an optimizer step after every Foreach
	// decoder layers: foreach calls (_foreach_mul_, _foreach_addcmul_,
	// _foreach_add_) on lists of those layers' parameters, nine a layer,
	// entries of thousands of rows as an optimizer's are.
	Foreach int
}

// Stats describe what Write produced.
type Stats struct {
	Entries int   // keys of "data"
	Rows    int   // rows msprobe's compare flattens them into
	Bytes   int64 // bytes written
}

// Write writes one dump.json to w.
func Write(w io.Writer, o Options) (Stats, error) {
	if o.Layers <= 0 {
		o.Layers = 2
	}
	if o.Hidden <= 0 {
		o.Hidden = 4096
	}
	if o.Framework == "" {
		o.Framework = "pytorch"
	}
	cw := &countWriter{w: w}
	g := &gen{
		e:     emitter{w: bufio.NewWriterSize(cw, 1<<16)},
		o:     o,
		rng:   rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15)),
		noise: rand.New(rand.NewPCG(o.Seed, 0x2545f4914f6cdd1d)),
		calls: map[string]int{},
	}
	task := "statistics"
	dataDir := ""
	if o.Tensor {
		task, dataDir = "tensor", "./dump_tensor_data"
	}
	e := &g.e
	e.beginObj()
	e.key("task")
	e.str(task)
	e.key("level")
	e.str("mix")
	e.key("framework")
	e.str(o.Framework)
	e.key("dump_data_dir")
	if dataDir == "" {
		e.null()
	} else {
		e.str(dataDir)
	}
	e.key("data")
	e.beginObj()
	g.entry("Tensor.to.0.forward", func() {
		g.field("input_args", func() { g.tensor("torch.int64", []int{4, 2048}, false) })
		g.kwargs(func() { g.scalarKw("dtype", "torch.dtype", g.strVal("torch.int64")) })
		g.field("output", func() { g.tensor("torch.int64", []int{4, 2048}, false) })
	})
	g.module("Module.model.embed_tokens.Embedding", []string{"weight"}, [][]int{{32000, o.Hidden}})
	g.curLayer = -1
	for layer := 0; o.TargetBytes > 0 && cw.n+int64(e.w.Buffered()) < o.TargetBytes || layer < o.Layers; layer++ {
		g.layer(layer)
		if o.Foreach > 0 && (layer+1)%o.Foreach == 0 {
			g.optimizerStep(9 * o.Foreach)
		}
		if e.err != nil {
			break
		}
	}
	e.end() // data
	e.end() // top
	e.w.WriteByte('\n')
	if err := e.w.Flush(); err != nil && e.err == nil {
		e.err = err
	}
	return Stats{Entries: g.entries, Rows: g.rows, Bytes: cw.n}, e.err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

type gen struct {
	e       emitter
	o       Options
	rng     *rand.Rand
	noise   *rand.Rand
	calls   map[string]int
	entries int
	rows    int
	// data_name prefix of the entry being written and the running index
	// path of its tensors.
	entryName string
	category  string
	path      []string
	curLayer  int  // decoder layer being written, -1 before the first
	diverging bool // Diverge applies from here on
}

// entry writes one "data" member.
func (g *gen) entry(name string, body func()) {
	g.entries++
	g.entryName = name
	g.e.key(name)
	g.e.beginObj()
	body()
	g.e.end()
}

// call returns the next call index of an API.
func (g *gen) call(api string) int {
	n := g.calls[api]
	g.calls[api] = n + 1
	return n
}

func (g *gen) field(name string, items ...func()) {
	if name == "output" && g.o.Diverge != 0 && g.curLayer >= g.o.DivergeLayer {
		g.diverging = true
	}
	g.e.key(name)
	g.e.beginArr()
	g.category = name
	switch name {
	case "input_args", "input":
		g.category = "input"
	}
	for i, it := range items {
		g.path = append(g.path[:0], strconv.Itoa(i))
		it()
	}
	g.e.end()
}

func (g *gen) kwargs(items ...func()) {
	g.e.key("input_kwargs")
	g.e.beginObj()
	g.category = "kwargs"
	for _, it := range items {
		it()
	}
	g.e.end()
}

// scalarKw writes a keyword argument holding a non-tensor item.
func (g *gen) scalarKw(key, typ string, value func()) {
	g.e.key(key)
	g.scalarItem(typ, value)
}

// kwTensor writes a keyword argument holding a tensor.
func (g *gen) kwTensor(key, dtype string, shape []int) {
	g.e.key(key)
	g.path = append(g.path[:0], key)
	g.tensor(dtype, shape, false)
}

func (g *gen) strVal(s string) func() { return func() { g.e.str(s) } }

func (g *gen) scalarItem(typ string, value func()) {
	g.rows++
	g.e.beginObj()
	g.e.key("type")
	g.e.str(typ)
	if value != nil {
		g.e.key("value")
		value()
	}
	g.e.end()
}

func (g *gen) null() {
	g.rows++
	g.e.null()
}

// stat draws a statistic around scale, perturbed for bench dumps.
func (g *gen) stat(scale float64) float64 {
	v := scale * (1 + 0.5*g.rng.NormFloat64())
	if g.o.Perturb != 0 {
		v *= 1 + g.o.Perturb*g.noise.NormFloat64()
	}
	if g.diverging {
		v *= 1 + g.o.Diverge
	}
	return v
}

// tensor writes a tensor item with statistics.
func (g *gen) tensor(dtype string, shape []int, requiresGrad bool) {
	g.rows++
	e := &g.e
	e.beginObj()
	e.key("type")
	e.str("torch.Tensor")
	e.key("dtype")
	e.str(dtype)
	e.key("shape")
	e.beginArr()
	for _, d := range shape {
		e.int(d)
	}
	e.end()
	isInt := dtype == "torch.int64" || dtype == "torch.int32"
	switch {
	case dtype == "torch.bool":
		e.key("Max")
		e.bool(true)
		e.key("Min")
		e.bool(false)
		e.key("Mean")
		e.null()
		e.key("Norm")
		e.null()
	case isInt:
		hi := g.rng.IntN(32000)
		e.key("Max")
		e.int(hi)
		e.key("Min")
		e.int(0)
		e.key("Mean")
		e.float(float64(hi) / 2.7)
		e.key("Norm")
		e.float(float64(hi) * 31.5)
	default:
		mx := math.Abs(g.stat(2))
		e.key("Max")
		if g.rng.IntN(5000) == 0 {
			e.raw("Infinity")
		} else {
			e.float(mx)
		}
		e.key("Min")
		e.float(-math.Abs(g.stat(2)))
		e.key("Mean")
		e.float(g.stat(1e-3))
		e.key("Norm")
		if g.rng.IntN(5000) == 0 {
			e.raw("NaN")
		} else {
			e.float(math.Abs(g.stat(300)))
		}
	}
	e.key("requires_grad")
	e.bool(requiresGrad)
	if g.o.MD5 {
		// the NPU side's CRC (the same Seed), unless the statistics differ
		crc := g.rng.Uint32()
		if g.o.Perturb != 0 || g.diverging {
			crc ^= 0x9e3779b9
		}
		e.key("md5")
		e.str(fmt.Sprintf("%08x", crc))
	}
	if g.o.Tensor {
		name := g.entryName + "." + g.category
		for _, p := range g.path {
			name += "." + p
		}
		e.key("data_name")
		e.str(name + ".pt")
	}
	e.end()
}

// module writes a module forward entry with parameters, its backward and
// its parameter gradients are written by the caller through moduleBackward.
func (g *gen) module(prefix string, params []string, shapes [][]int) {
	h := g.o.Hidden
	g.entry(prefix+".forward.0", func() {
		g.field("input_args", func() { g.tensor("torch.bfloat16", []int{4, 2048, h}, true) })
		g.kwargs()
		g.field("output", func() { g.tensor("torch.bfloat16", []int{4, 2048, h}, true) })
		g.e.key("parameters")
		g.e.beginObj()
		g.category = "parameters"
		for i, p := range params {
			g.e.key(p)
			g.path = append(g.path[:0], p)
			g.tensor("torch.bfloat16", shapes[i], true)
		}
		g.e.end()
		g.e.key("is_recompute")
		g.e.bool(false)
	})
}

func (g *gen) moduleBackward(prefix string, params []string, shapes [][]int) {
	h := g.o.Hidden
	g.entry(prefix+".backward.0", func() {
		g.field("input", func() { g.tensor("torch.bfloat16", []int{4, 2048, h}, false) })
		g.field("output", func() { g.tensor("torch.bfloat16", []int{4, 2048, h}, false) })
	})
	if len(params) == 0 {
		return
	}
	g.entry(prefix+".parameters_grad.0", func() {
		for i, p := range params {
			g.e.key(p)
			g.e.beginArr()
			g.category = p
			g.path = g.path[:0]
			g.tensor("torch.float32", shapes[i], false)
			g.e.end()
		}
	})
}

// optimizerStep writes the foreach calls of an optimizer step on n
// parameters: each takes two or three lists of n tensors.
func (g *gen) optimizerStep(n int) {
	h := g.o.Hidden
	list := func(i int) func() {
		return func() {
			g.e.beginArr()
			for k := range n {
				g.path = append(g.path[:1], strconv.Itoa(k))
				g.tensor("torch.float32", []int{h, h / (1 + (i+k)%4)}, false)
			}
			g.path = g.path[:1]
			g.e.end()
		}
	}
	for _, op := range []struct {
		name  string
		lists int
	}{{"Torch._foreach_mul_", 2}, {"Torch._foreach_addcmul_", 3}, {"Torch._foreach_add_", 2}} {
		g.api(op.name, func() {
			items := make([]func(), op.lists)
			for i := range items {
				items[i] = list(i)
			}
			g.field("input_args", items...)
			g.kwargs(func() { g.scalarKw("alpha", "float", func() { g.e.float(0.9) }) })
			g.field("output")
		})
	}
}

// api writes one API forward entry named {api}.{n}.forward.
func (g *gen) api(api string, body func()) string {
	name := api + "." + strconv.Itoa(g.call(api)) + ".forward"
	g.entry(name, body)
	return name
}

func (g *gen) layer(i int) {
	g.curLayer = i
	h := g.o.Hidden
	ffn := h * 11 / 4
	act := []int{4, 2048, h}
	pfx := "Module.model.layers." + strconv.Itoa(i)
	bf := func(shape []int) func() { return func() { g.tensor("torch.bfloat16", shape, true) } }
	intItem := func(v int) func() { return func() { g.scalarItem("int", func() { g.e.int(v) }) } }

	g.entry(pfx+".LlamaDecoderLayer.forward.0", func() {
		g.field("input_args", bf(act))
		g.kwargs(
			func() { g.kwTensor("attention_mask", "torch.bool", []int{4, 1, 2048, 2048}) },
			func() { g.kwTensor("position_ids", "torch.int64", []int{1, 2048}) },
			func() { g.scalarKw("use_cache", "bool", func() { g.e.bool(false) }) },
			func() { g.scalarKw("output_attentions", "bool", func() { g.e.bool(false) }) },
			func() { g.e.key("past_key_value"); g.null() },
		)
		g.field("output", bf(act), g.null)
		g.e.key("parameters")
		g.e.beginObj()
		g.e.end()
		g.e.key("is_recompute")
		g.e.bool(false)
	})
	norm := func(name string) {
		g.api("NPU.npu_rms_norm", func() {
			g.field("input_args", bf(act), bf([]int{h}))
			g.kwargs(func() { g.scalarKw("epsilon", "float", func() { g.e.float(1e-06) }) })
			g.field("output", bf(act), func() { g.tensor("torch.float32", []int{4, 2048, 1}, false) })
		})
		g.module(pfx+"."+name+".LlamaRMSNorm", []string{"weight"}, [][]int{{h}})
	}
	linear := func(name string, in, out int, bias bool) {
		g.api("Functional.linear", func() {
			third := g.null
			if bias {
				third = bf([]int{out})
			}
			g.field("input_args", bf([]int{4, 2048, in}), bf([]int{out, in}), third)
			g.kwargs()
			g.field("output", bf([]int{4, 2048, out}))
		})
		params, shapes := []string{"weight"}, [][]int{{out, in}}
		if bias {
			params, shapes = append(params, "bias"), append(shapes, []int{out})
		}
		g.module(pfx+"."+name+".Linear", params, shapes)
	}
	norm("input_layernorm")
	for _, p := range []string{"q_proj", "k_proj", "v_proj"} {
		linear("self_attn."+p, h, h, true)
		g.api("Tensor.view", func() {
			g.field("input_args", bf(act), intItem(4), intItem(2048), intItem(32), intItem(h/32))
			g.kwargs()
			g.field("output", bf([]int{4, 2048, 32, h / 32}))
		})
		g.api("Tensor.transpose", func() {
			g.field("input_args", bf([]int{4, 2048, 32, h / 32}), intItem(1), intItem(2))
			g.kwargs()
			g.field("output", bf([]int{4, 32, 2048, h / 32}))
		})
	}
	g.api("Tensor.__getitem__", func() {
		g.field("input_args", bf([]int{4, 32, 2048, h / 32}), func() {
			g.e.beginArr()
			g.scalarItem("ellipsis", func() { g.e.str("...") })
			g.scalarItem("slice", func() { g.e.beginArr(); g.e.null(); g.e.int(h / 64); g.e.null(); g.e.end() })
			g.e.end()
		})
		g.kwargs()
		g.field("output", bf([]int{4, 32, 2048, h / 64}))
	})
	g.api("Torch.matmul", func() {
		g.field("input_args", bf([]int{4, 32, 2048, h / 32}), bf([]int{4, 32, h / 32, 2048}))
		g.kwargs()
		g.field("output", bf([]int{4, 32, 2048, 2048}))
	})
	g.api("Functional.softmax", func() {
		g.field("input_args", bf([]int{4, 32, 2048, 2048}))
		g.kwargs(func() { g.scalarKw("dim", "int", func() { g.e.int(-1) }) },
			func() { g.scalarKw("dtype", "torch.dtype", g.strVal("torch.float32")) })
		g.field("output", bf([]int{4, 32, 2048, 2048}))
	})
	g.api("Functional.dropout", func() {
		g.field("input_args", bf([]int{4, 32, 2048, 2048}))
		g.kwargs(func() { g.scalarKw("p", "float", func() { g.e.float(0.1) }) },
			func() { g.scalarKw("training", "bool", func() { g.e.bool(true) }) },
			func() { g.scalarKw("inplace", "bool", func() { g.e.bool(false) }) })
		g.field("output", bf([]int{4, 32, 2048, 2048}))
	})
	linear("self_attn.o_proj", h, h, false)
	g.api("Tensor.__add__", func() {
		g.field("input_args", bf(act), bf(act))
		g.kwargs()
		g.field("output", bf(act))
	})
	norm("post_attention_layernorm")
	linear("mlp.gate_proj", h, ffn, false)
	linear("mlp.up_proj", h, ffn, false)
	g.api("Functional.silu", func() {
		g.field("input_args", bf([]int{4, 2048, ffn}))
		g.kwargs(func() { g.scalarKw("inplace", "bool", func() { g.e.bool(false) }) })
		g.field("output", bf([]int{4, 2048, ffn}))
	})
	g.api("Tensor.__mul__", func() {
		g.field("input_args", bf([]int{4, 2048, ffn}), bf([]int{4, 2048, ffn}))
		g.kwargs()
		g.field("output", bf([]int{4, 2048, ffn}))
	})
	linear("mlp.down_proj", ffn, h, false)

	// Backward pass of the layer (in reverse order), with parameter grads.
	for _, p := range []struct {
		name   string
		in     int
		out    int
		params []string
	}{
		{"mlp.down_proj", ffn, h, []string{"weight"}},
		{"mlp.up_proj", h, ffn, []string{"weight"}},
		{"mlp.gate_proj", h, ffn, []string{"weight"}},
		{"self_attn.o_proj", h, h, []string{"weight"}},
		{"self_attn.v_proj", h, h, []string{"weight", "bias"}},
	} {
		n := g.calls["Functional.linear.backward"]
		g.calls["Functional.linear.backward"] = n + 1
		g.entry("Functional.linear."+strconv.Itoa(n)+".backward", func() {
			g.field("input", bf([]int{4, 2048, p.out}))
			g.field("output", bf([]int{4, 2048, p.in}), bf([]int{p.out, p.in}), g.null)
		})
		shapes := [][]int{{p.out, p.in}, {p.out}}
		g.moduleBackward(pfx+"."+p.name+".Linear", p.params, shapes[:len(p.params)])
	}
}

// emitter writes JSON the way Python's json.dump(indent=1) does.
type emitter struct {
	w     *bufio.Writer
	err   error
	depth int
	// first[d] is true while the container at depth d has no member yet;
	// afterKey suppresses the newline before a member's value.
	first    []bool
	kinds    []byte // closing byte of each open container
	afterKey bool
	buf      []byte
}

func (e *emitter) sep() {
	if e.afterKey {
		e.afterKey = false
		return
	}
	if e.depth == 0 {
		return
	}
	if !e.first[e.depth-1] {
		e.w.WriteByte(',')
	}
	e.first[e.depth-1] = false
	e.w.WriteByte('\n')
	for i := 0; i < e.depth; i++ {
		e.w.WriteByte(' ')
	}
}

func (e *emitter) open(c byte) {
	e.sep()
	e.w.WriteByte(c)
	e.first = append(e.first[:e.depth], true)
	closer := byte('}')
	if c == '[' {
		closer = ']'
	}
	e.kinds = append(e.kinds[:e.depth], closer)
	e.depth++
}

func (e *emitter) beginObj() { e.open('{') }
func (e *emitter) beginArr() { e.open('[') }

// end closes the innermost container.
func (e *emitter) end() {
	e.depth--
	if !e.first[e.depth] {
		e.w.WriteByte('\n')
		for i := 0; i < e.depth; i++ {
			e.w.WriteByte(' ')
		}
	}
	e.w.WriteByte(e.kinds[e.depth])
}

func (e *emitter) key(k string) {
	e.sep()
	e.buf = appendJSONString(e.buf[:0], k)
	e.w.Write(e.buf)
	e.w.WriteString(": ")
	e.afterKey = true
}

func (e *emitter) str(s string) {
	e.sep()
	e.buf = appendJSONString(e.buf[:0], s)
	e.w.Write(e.buf)
}

func (e *emitter) raw(s string) {
	e.sep()
	e.w.WriteString(s)
}

func (e *emitter) null() { e.raw("null") }

func (e *emitter) bool(b bool) {
	if b {
		e.raw("true")
	} else {
		e.raw("false")
	}
}

func (e *emitter) int(v int) {
	e.sep()
	e.buf = strconv.AppendInt(e.buf[:0], int64(v), 10)
	e.w.Write(e.buf)
}

// float writes v as Python's json does: repr, NaN, Infinity, -Infinity.
func (e *emitter) float(v float64) {
	e.sep()
	switch {
	case math.IsNaN(v):
		e.w.WriteString("NaN")
	case math.IsInf(v, 1):
		e.w.WriteString("Infinity")
	case math.IsInf(v, -1):
		e.w.WriteString("-Infinity")
	default:
		e.buf = msprobe.AppendPyFloat(e.buf[:0], v)
		e.w.Write(e.buf)
	}
}

// appendJSONString quotes s as Python's json.dumps (ensure_ascii) does.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			dst = append(dst, '\\', byte(r))
		case r == '\n':
			dst = append(dst, '\\', 'n')
		case r < 0x20 || r > 0x7e:
			if r > 0xffff {
				r -= 0x10000
				dst = fmt.Appendf(dst, "\\u%04x\\u%04x", 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			} else {
				dst = fmt.Appendf(dst, "\\u%04x", r)
			}
		default:
			dst = append(dst, byte(r))
		}
	}
	return append(dst, '"')
}
