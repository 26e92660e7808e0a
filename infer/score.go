package infer

import (
	"slices"
	"strings"

	"github.com/layermap/layermap/printparse"
)

// Weights of the local similarity of two modules. They sum to 1.
const (
	wName   = 0.45
	wClass  = 0.15
	wKind   = 0.25
	wStruct = 0.10
	wShape  = 0.05
)

// wrapperClasses are modules that wrap a whole model; they are neutral
// against any model class.
var wrapperClasses = map[string]bool{
	"DistributedDataParallel": true, "DeepSpeedEngine": true, "Float16Module": true,
	"FullyShardedDataParallel": true, "OptimizedModule": true, "DataParallel": true,
	"CheckpointWrapper": true, "FSDPCheckpointWrapper": true,
}

// engineClasses are the training engines msprobe may be handed: they wrap
// the model once at the top and have no counterpart worth a YAML line
// (DeepSpeedEngine on one side is DistributedDataParallel on the other).
var engineClasses = map[string]bool{
	"DistributedDataParallel": true, "DeepSpeedEngine": true, "FullyShardedDataParallel": true, "DataParallel": true,
}

// isEngine reports whether class is a training engine: one of
// engineClasses, or any data-parallel wrapper, which frameworks name
// "...DataParallel" (megatron-core's TorchFullyShardedDataParallel).
func isEngine(class string) bool {
	c := unsharded(class)
	return engineClasses[c] || strings.HasSuffix(c, "DataParallel")
}

// engineChild reports whether c, the one child of the engine n, is an
// engine too: a training engine, or the tuner a PEFT model holds as
// "base_model" (LoraModel), which calls the model it wraps and nothing
// else.
func engineChild(n, c *printparse.Node) bool {
	return isEngine(c.Class) || strings.HasPrefix(n.Class, "PeftModel") && c.Name == "base_model" && len(kids(c)) == 1
}

// isWrapper reports whether class wraps a whole model (wrapperClasses),
// under FSDP2's class prefix too.
func isWrapper(class string) bool {
	c := unsharded(class)
	return wrapperClasses[c] || isEngine(c) || strings.HasPrefix(class, "FSDP") && strings.Contains(class, "Wrapper")
}

// unsharded is class without the "FSDP" prefix torch's fully_shard gives
// the class of every module it shards (FSDPFloat16Module is a
// Float16Module).
func unsharded(class string) string {
	if c, ok := strings.CutPrefix(class, "FSDP"); ok && c != "" && c[0] >= 'A' && c[0] <= 'Z' {
		return c
	}
	return class
}

// genericClasses are torch containers: they never key a YAML rule, because
// a rule on them would fire at every such container in the model.
var genericClasses = map[string]bool{
	"ModuleList": true, "Sequential": true, "ModuleDict": true, "ParameterList": true, "ParameterDict": true,
}

// GenericClass reports a torch container class (ModuleList, Sequential,
// ...) that never keys a layer_mapping rule: a rule on it would fire at
// every such container in the model.
func GenericClass(class string) bool { return genericClasses[class] }

// paramContainers hold parameters, not modules (PEFT's lora_embedding_A):
// they have no forward, so they never appear in a dump and pair with
// nothing.
var paramContainers = map[string]bool{"ParameterDict": true, "ParameterList": true}

// kindSim compares leaf kinds: -1 means "never partners".
func kindSim(a, b *info) float64 {
	ka, kb := a.kind, b.kind
	if (ka == printparse.KindIdentity) != (kb == printparse.KindIdentity) {
		return -1
	}
	if paramContainers[a.node.Class] != paramContainers[b.node.Class] {
		return -1 // parameters, no forward: never a module's partner
	}
	leafA, leafB := a.nkids == 0, b.nkids == 0
	if ka == kb {
		if ka == printparse.KindContainer || ka == printparse.KindOther {
			if leafA != leafB {
				return 0.3
			}
			return 0.8
		}
		return 1
	}
	if leafA != leafB {
		return 0
	}
	if ka == printparse.KindOther || kb == printparse.KindOther {
		return 0.3
	}
	return 0
}

// nameSim compares module names.
func nameSim(a, b *info) float64 {
	if a.node.Name == b.node.Name {
		return 1
	}
	if a.numeric && b.numeric {
		return 0
	}
	if a.numeric || b.numeric {
		return 0.3
	}
	s := tokenSim(a.name, b.name)
	// A module named after the other's class ("encoder: MLP" vs "mlp").
	if x := 0.8 * tokenSim(a.name, b.class); x > s {
		s = x
	}
	if x := 0.8 * tokenSim(a.class, b.name); x > s {
		s = x
	}
	return s
}

// classSim compares class names.
func classSim(a, b *info) float64 {
	if a.node.Class == b.node.Class {
		return 1
	}
	if a.wrapper || b.wrapper {
		return 0.5
	}
	return tokenSim(a.class, b.class)
}

func structSim(a, b *info) float64 {
	if a.repeat > 0 || b.repeat > 0 {
		if a.repeat == b.repeat {
			return 1
		}
		if a.repeat == 0 || b.repeat == 0 {
			return 0.2
		}
		return 0.6
	}
	x, y := a.nkids, b.nkids
	if x == y {
		return 1
	}
	return float64(min(x, y)) / float64(max(x, y))
}

// local is the similarity of two modules on their own, in [0, 1], with
// the reason codes that contributed; ok is false when they may never be
// partners.
func local(a, b *info) (score float64, reasons []string, ok bool) {
	if never(a, b) {
		return 0, nil, false
	}
	k := kindSim(a, b)
	n, c, st := nameSim(a, b), classSim(a, b), structSim(a, b)
	if n < 0.2 && !a.numeric && !b.numeric && (a.nkids == 0 || b.nkids == 0) {
		// Two leaves with unrelated names are not partners on kind alone
		// (linear_qkv is not o_proj).
		return 0, nil, false
	}
	total := wName + wClass + wKind + wStruct
	sum := wName*n + wClass*c + wKind*k + wStruct*st
	if len(a.dims) > 0 && len(b.dims) > 0 {
		total += wShape
		if slices.Equal(a.dims, b.dims) {
			sum += wShape
			reasons = append(reasons, "shape")
		}
	}
	score = sum / total
	switch {
	case a.node.Name == b.node.Name:
		reasons = append([]string{"name"}, reasons...)
	case n >= 0.5:
		reasons = append([]string{"synonym"}, reasons...)
	}
	if c >= 0.6 {
		reasons = append(reasons, "class")
	}
	if k >= 1 && a.kind != printparse.KindContainer && a.kind != printparse.KindOther {
		reasons = append(reasons, "kind")
	}
	if a.nkids > 0 && st >= 1 {
		if a.repeat > 0 {
			reasons = append(reasons, "repeat")
		} else {
			reasons = append(reasons, "children")
		}
	}
	return score, reasons, true
}

// minor reports modules that compute nothing worth pairing on their own:
// dropouts, activations and placeholders. They never decide structure:
// they are not paired across levels, and they do not count when the share
// of a subtree that aligns is measured (a residual Dropout on one side
// must not steal a parent's partner).
func minor(in *info) bool {
	switch in.kind {
	case printparse.KindDropout, printparse.KindActivation, printparse.KindIdentity:
		return in.nkids == 0
	}
	return false
}

// wrapsAgainst reports whether w wraps one module (see info.wraps) of
// another class than m, which has several children of its own: m's
// partner is then what w wraps, not w (GPTModel and ChatGLMModel, not the
// ForCausalLM holding only ChatGLMModel). Known whole-model wrappers
// (Float16Module) keep their convention, and so does a module of m's
// class (legacy Megatron's GPTModel holding its language model).
func wrapsAgainst(w, m *info) bool {
	return w.wraps && !w.wrapper && m.nmajor >= 2 && classSim(w, m) < 0.6
}

// never reports the pairs no evidence makes partners, a template's
// included: a placeholder and a real module, parameters and a module, a
// rotary embedding (a table of cos/sin, not a learned position table) and
// anything else.
func never(a, b *info) bool {
	return kindSim(a, b) < 0 || isRotary(a) != isRotary(b)
}

// decides reports whether a child counts when the share of a module's
// children that align is measured: not a minor module, and not a rotary
// embedding (a table of cos/sin that one side keeps at the model level and
// the other inside each attention, or computes without a module).
func decides(in *info) bool { return !minor(in) && !isRotary(in) }

// isRotary reports whether a module is a rotary position embedding, by
// its name or class (rotary_pos_emb, Qwen2RotaryEmbedding, Llama3ScaledRoPE).
func isRotary(in *info) bool {
	for _, s := range []string{in.node.Name, in.node.Class} {
		if s = strings.ToLower(s); strings.Contains(s, "rotary") || strings.Contains(s, "rope") {
			return true
		}
	}
	return false
}
