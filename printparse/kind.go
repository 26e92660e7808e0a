package printparse

import (
	"strings"

	"github.com/layermap/layermap/printparse/scan"
)

// Node kinds returned by Kind.
const (
	KindLinear     = "Linear"
	KindNorm       = "Norm"
	KindEmbedding  = "Embedding"
	KindConv       = "Conv"
	KindDropout    = "Dropout"
	KindIdentity   = "Identity"
	KindActivation = "Activation"
	KindContainer  = "Container"
	KindOther      = "Other"
)

// splitFields splits an extra_repr line at its top-level commas:
// "(3584,), eps=1e-06" gives {"" "(3584,)"} and {"eps" "1e-06"}. Empty
// fields (a trailing ", ") are dropped.
func splitFields(s string) []Field {
	var out []Field
	for _, f := range scan.SplitTop(s, ',') {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if k := strings.IndexByte(f, '='); k > 0 && isIdent(f[:k]) {
			out = append(out, Field{Key: f[:k], Value: strings.TrimSpace(f[k+1:])})
			continue
		}
		out = append(out, Field{Value: f})
	}
	return out
}

func isIdent(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Kind classifies the node by its class name: KindLinear
// (ColumnParallelLinear, Linear4bit, lora.Linear, ...), KindNorm (RMSNorm,
// LayerNorm, FusedLayerNorm, ...), KindEmbedding (Embedding,
// VocabParallelEmbedding; not rotary embeddings), KindConv, KindDropout,
// KindIdentity, KindActivation (SiLU, GELU, SiLUActivation, ...),
// KindContainer for any other node with children, KindOther otherwise.
func (n *Node) Kind() string {
	c := n.Class
	if n.None {
		return KindOther
	}
	if k := strings.LastIndexByte(c, '.'); k >= 0 {
		c = c[k+1:]
	}
	switch {
	case strings.Contains(c, "Identity"):
		return KindIdentity
	case strings.Contains(c, "Linear") && !strings.Contains(c, "Attention"):
		return KindLinear
	case strings.Contains(c, "Rotary") || strings.Contains(c, "RoPE"):
		if len(n.Children) > 0 {
			return KindContainer
		}
		return KindOther
	case strings.Contains(c, "Embedding"):
		// Megatron's Embedding / LanguageModelEmbedding hold the embedding
		// tables as children; PEFT's lora.Embedding wraps one but is one.
		if !strings.HasPrefix(n.Class, "lora.") && len(n.Extra) == 0 && n.hasChildKind(KindEmbedding) {
			return KindContainer
		}
		return KindEmbedding
	case strings.Contains(c, "Norm") && !strings.Contains(c, "MLP"): // not TE's LayerNormMLP
		return KindNorm
	case strings.HasPrefix(c, "Conv") || strings.Contains(c, "Conv1d") || strings.Contains(c, "Conv2d") ||
		strings.Contains(c, "Conv3d") || strings.Contains(c, "Conv1D") || strings.Contains(c, "ConvTranspose"):
		return KindConv
	case strings.Contains(c, "Dropout"):
		return KindDropout
	case isActivation(c) && len(n.Children) == 0:
		return KindActivation
	case len(n.Children) > 0:
		return KindContainer
	}
	return KindOther
}

func (n *Node) hasChildKind(k string) bool {
	for _, c := range n.Children {
		if c.Kind() == k {
			return true
		}
	}
	return false
}

func isActivation(c string) bool {
	if strings.Contains(c, "Activation") {
		return true
	}
	for _, s := range []string{"GELU", "SiLU", "ReLU", "Sigmoid", "Tanh", "Swish", "Mish", "SwiGLU", "GLU", "ELU", "Softmax", "Softplus", "Hardswish", "QuickGELU"} {
		if strings.Contains(c, s) {
			return true
		}
	}
	return false
}

// reprFields returns the node's fields without the statistics the
// DeepSpeed flops profiler puts in front of every extra_repr ("1.29 M,
// 100.00% Params, 41271.95 GMACs, 100.00% MACs, 1.84 s, 100.00% latency,
// 44.78 TFLOPS, ...").
func (n *Node) reprFields() []Field {
	f := n.Fields
	if len(f) >= 7 && f[1].Key == "" && strings.HasSuffix(f[1].Value, "% Params") && strings.HasSuffix(f[6].Value, "FLOPS") {
		return f[7:]
	}
	return f
}

// Dims returns the sizes the node prints, when it prints any: a Linear's
// in and out features, an Embedding's count and dimension, a Norm's
// normalized shape, a Conv's in and out channels followed by its kernel
// size. It returns nil otherwise (no extra_repr, as Megatron's parallel
// layers, or an unknown kind). A size 0 is no size: DeepSpeed ZeRO-3
// partitions the weight a Norm prints its shape from (Qwen2RMSNorm((0,),
// eps=1e-06) in LLaMA-Factory logs), so such a node gives nil too.
func (n *Node) Dims() []int {
	d := n.dims()
	for _, x := range d {
		if x == 0 {
			return nil
		}
	}
	return d
}

func (n *Node) dims() []int {
	f := n.reprFields()
	if len(f) == 0 {
		return nil
	}
	switch n.Kind() {
	case KindLinear:
		in, ok1 := fieldInt(f, "in_features", "in")
		out, ok2 := fieldInt(f, "out_features", "out")
		if ok1 && ok2 {
			return []int{in, out}
		}
		if len(f) >= 2 && f[0].Key == "" && f[1].Key == "" { // Linear(in, out) by hand
			if a, ok := scan.Atoi(f[0].Value); ok {
				if b, ok := scan.Atoi(f[1].Value); ok {
					return []int{a, b}
				}
			}
		}
	case KindEmbedding:
		num, ok1 := fieldInt(f, "num_embeddings", "")
		dim, ok2 := fieldInt(f, "embedding_dim", "")
		if ok1 && ok2 {
			return []int{num, dim}
		}
		if len(f) >= 2 && f[0].Key == "" && f[1].Key == "" {
			a, ok1 := scan.Atoi(f[0].Value)
			b, ok2 := scan.Atoi(f[1].Value)
			if ok1 && ok2 {
				return []int{a, b}
			}
		}
	case KindNorm:
		if v, ok := fieldValue(f, "normalized_shape"); ok {
			return ints(v)
		}
		if f[0].Key == "" {
			if d := ints(f[0].Value); d != nil {
				return d
			}
		}
	case KindConv:
		if f0, ok := fieldValue(f, "nx"); ok { // HF Conv1D(nf=..., nx=...)
			if nf, ok := fieldValue(f, "nf"); ok {
				a, ok1 := scan.Atoi(f0)
				b, ok2 := scan.Atoi(nf)
				if ok1 && ok2 {
					return []int{a, b}
				}
			}
		}
		if len(f) >= 2 && f[0].Key == "" && f[1].Key == "" {
			a, ok1 := scan.Atoi(f[0].Value)
			b, ok2 := scan.Atoi(f[1].Value)
			if ok1 && ok2 {
				d := []int{a, b}
				if k, ok := fieldValue(f, "kernel_size"); ok {
					d = append(d, ints(k)...)
				} else if len(f) >= 3 && f[2].Key == "" {
					d = append(d, ints(f[2].Value)...)
				}
				return d
			}
		}
	}
	return nil
}

func fieldValue(f []Field, key string) (string, bool) {
	for _, x := range f {
		if x.Key == key {
			return x.Value, true
		}
	}
	return "", false
}

func fieldInt(f []Field, key, alt string) (int, bool) {
	v, ok := fieldValue(f, key)
	if !ok && alt != "" {
		v, ok = fieldValue(f, alt)
	}
	if !ok {
		return 0, false
	}
	return scan.Atoi(v)
}

// ints reads the integers of "(3584,)", "torch.Size([256])", "(2, 14, 14)"
// or "3"; nil when there are none or something else is in the way.
func ints(v string) []int {
	v = strings.TrimPrefix(strings.TrimSpace(v), "torch.Size")
	v = strings.Trim(v, "()[] ")
	if v == "" {
		return nil
	}
	var out []int
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		x, ok := scan.Atoi(p)
		if !ok {
			return nil
		}
		out = append(out, x)
	}
	return out
}
