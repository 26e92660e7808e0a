package infer

import (
	"strings"
	"unicode"

	"github.com/agnivade/levenshtein"
)

// phrases rewrites whole snake_case name fragments to canonical role words
// before a name is split into tokens. Longer phrases come first so that
// "post_attention_layernorm" wins over "layernorm". Every entry is a
// convention shared by Megatron, MindSpeed, NeMo and Hugging Face models.
var phrases = []struct{ from, to string }{
	{"post_attention_layernorm", "norm_2"},
	{"pre_mlp_layernorm", "norm_2"},
	{"input_layernorm", "norm_1"},
	{"input_norm", "norm_1"},
	{"post_attention_norm", "norm_2"},
	{"pre_mlp_norm", "norm_2"},
	{"attention_norm", "norm_1"},
	{"ffn_norm", "norm_2"},
	{"sa_norm", "norm_1"},  // torchtune
	{"mlp_norm", "norm_2"}, // torchtune
	{"ln_1", "norm_1"},
	{"ln_2", "norm_2"},
	{"norm1", "norm_1"},
	{"norm2", "norm_2"},
	{"query_key_value", "qkv"},
	{"dense_h_to_4h", "up"},
	{"dense_4h_to_h", "down"},
	{"h_to_4h", "up"},
	{"4h_to_h", "down"},
	{"linear_fc1", "up"},
	{"linear_fc2", "down"},
	{"fc1", "up"},
	{"fc2", "down"},
	{"c_fc", "up"},
	{"c_proj", "down"},
	// Meta's Llama reference code and torchtune: wq/wk/wv/wo, a gated
	// feed_forward with w1 = gate, w3 = up, w2 = down (HF Mixtral's
	// experts use the same names); the final projection "output" is in
	// wholeNames.
	{"feed_forward", "mlp"},
	{"block_sparse_moe", "mlp"}, // HF Mixtral's MoE block, Megatron's "mlp" (MoELayer)
	{"output_proj", "proj_out"},
	{"wqkv", "qkv"},
	{"wq", "q_proj"},
	{"wk", "k_proj"},
	{"wv", "v_proj"},
	{"wo", "proj_out"},
	{"w1", "gate"},
	{"w3", "up"},
	{"w2", "down"},
	{"lm_head", "head"},
	{"output_layer", "head"},
	{"word_embeddings", "embed"},
	{"embed_tokens", "embed"},
	{"rotary_pos_emb", "rotary"},
	{"rotary_emb", "rotary"},
	{"self_attention", "attn"},
	{"self_attn", "attn"},
	{"image_encoder", "vision"},
	{"vision_model", "vision"},
	{"vision_tower", "vision"},
	{"text_decoder", "lm"},
	{"language_model", "lm"},
	{"text_model", "lm"},
	{"multi_modal_projector", "merger"},
	{"linear_proj", "proj_out"},
	{"o_proj", "proj_out"},
	{"out_proj", "proj_out"},
	{"dense", "proj_out"}, // Megatron's attention output projection
	{"final_layernorm", "norm_final"},
	{"final_layer_norm", "norm_final"},
	{"layer_norm", "norm"},
	{"act_fn", "act"},
	{"activation_func", "act"},
}

// wholeNames rewrite a name that is exactly the key: "output" is the final
// projection in Meta's Llama code and torchtune (lm_head), but only as a
// whole name (BertSelfOutput, attention.output are something else).
var wholeNames = map[string]string{"output": "head"}

// synonyms maps single tokens to a canonical token.
var synonyms = map[string]string{
	"attention":   "attn",
	"attn":        "attn",
	"dense":       "proj",
	"projection":  "proj",
	"proj":        "proj",
	"layernorm":   "norm",
	"rmsnorm":     "norm",
	"ln":          "norm",
	"norm":        "norm",
	"embedding":   "embed",
	"embeddings":  "embed",
	"embed":       "embed",
	"wte":         "embed",
	"visual":      "vision",
	"vision":      "vision",
	"vit":         "vision",
	"merger":      "merger",
	"projector":   "merger",
	"connector":   "merger",
	"layers":      "layers",
	"layer":       "layers",
	"blocks":      "layers",
	"block":       "layers",
	"h":           "layers",
	"mlp":         "mlp",
	"ffn":         "mlp",
	"feedforward": "mlp",
	"rotary":      "rotary",
	"rope":        "rotary",
	"act":         "act",
	"activation":  "act",
	"head":        "head",
	"lm":          "lm",
	"model":       "lm",
	"out":         "out",
	"output":      "out",
	"up":          "up",
	"down":        "down",
	"experts":     "experts",
	"expert":      "experts",
	"router":      "gate",
	"gate":        "gate",
}

// nameStop are tokens that carry no meaning in a module name.
var nameStop = map[string]bool{"linear": true, "self": true, "module": true, "the": true}

// classStop are tokens that carry no meaning in a class name: model family
// names, framework prefixes and implementation variants.
var classStop = map[string]bool{
	"model": true, "module": true, "for": true, "conditional": true, "generation": true,
	"pretrained": true, "causal": true, "qwen": true, "qwen2": true, "qwen3": true, "vl": true,
	"parallel": true, "column": true, "row": true, "fused": true, "te": true, "mixed": true,
	"sdpa": true, "flash": true, "vocab": true, "megatron": true, "bio": true, "mm": true,
	"llama": true, "mistral": true, "mixtral": true, "deepseek": true, "v3": true, "bert": true,
	"gpt": true, "lm": true, "language": true, "text": true, "multimodal": true, "func": true,
	"op": true, "local": true, "extension": true, "with": true, "fp8": true, "rms": true,
	"_digits": true, // version numbers in class names (Qwen2_5_VL)
}

// tokenize splits a module name into canonical tokens: phrases first, then
// "_", ".", camelCase and letter/digit boundaries, synonyms last.
func tokenize(name string, stop map[string]bool) []string {
	s := snake(name)
	if w, ok := wholeNames[s]; ok {
		s = w
	}
	for _, p := range phrases {
		s = replaceWord(s, p.from, p.to)
	}
	var out []string
	for _, w := range splitWords(s) {
		if t, ok := synonyms[w]; ok {
			w = t
		}
		if stop[w] || (isNumber(w) && stop["_digits"]) {
			continue
		}
		out = append(out, w)
	}
	return out
}

// pathTokens splits a dotted module path into its words, synonyms applied
// but no phrase rewritten: a phrase names a module's role in its own
// parent (post_attention_layernorm is Llama's pre-MLP norm), while a path
// across levels says where the module sits (the norm inside the attention's
// output projection is the one after attention).
func pathTokens(path string) []string {
	var out []string
	for _, w := range splitWords(snake(path)) {
		if t, ok := synonyms[w]; ok {
			w = t
		}
		if nameStop[w] || isNumber(w) {
			continue
		}
		out = append(out, w)
	}
	return out
}

// snake lowercases a camelCase or mixed name into snake_case words.
func snake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			if i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]) ||
				(i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1]))) {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		if r == '.' || r == '-' {
			r = '_'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// replaceWord replaces from by to in s where from is bounded by "_" or the
// ends of s.
func replaceWord(s, from, to string) string {
	if !strings.Contains(s, from) {
		return s
	}
	parts := strings.Split("_"+s+"_", "_"+from+"_")
	if len(parts) == 1 {
		return s
	}
	r := strings.Join(parts, "_"+to+"_")
	return strings.Trim(r, "_")
}

// splitWords splits snake_case text at "_" and letter/digit boundaries.
func splitWords(s string) []string {
	var out []string
	for _, w := range strings.Split(s, "_") {
		if w == "" {
			continue
		}
		start := 0
		for i := 1; i < len(w); i++ {
			if isDigit(w[i]) != isDigit(w[i-1]) {
				out = append(out, w[start:i])
				start = i
			}
		}
		out = append(out, w[start:])
	}
	return out
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isNumber reports whether s is a non-empty run of digits (a list index).
func isNumber(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// tokenSim is the Dice coefficient of two token multisets; tokens that are
// not equal count as half a match when their Levenshtein ratio is at least
// 0.8 (typos, plurals).
func tokenSim(a, b []string) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	used := make([]bool, len(b))
	var match float64
	for _, x := range a {
		best, bi := 0.0, -1
		for j, y := range b {
			if used[j] {
				continue
			}
			s := 0.0
			if x == y {
				s = 1
			} else if len(x) >= 4 && len(y) >= 4 {
				d := levenshtein.ComputeDistance(x, y)
				r := 1 - float64(d)/float64(max(len(x), len(y)))
				if r >= 0.8 {
					s = 0.5
				}
			}
			if s > best {
				best, bi = s, j
			}
		}
		if bi >= 0 {
			used[bi] = true
			match += best
		}
	}
	return 2 * match / float64(len(a)+len(b))
}
