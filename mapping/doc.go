// Package mapping is msprobe's layer_mapping.yaml: the model, a loader that
// keeps every position and reports what msprobe would accept silently, an
// emitter for drafted mappings, and a resolver that rewrites NPU-side module
// and API names into the bench-side names exactly as msprobe does
// (msprobe core/compare/layer_mapping: data_scope_parser.py,
// postprocess_pass.py, layer_mapping.py; see
// ../shared/docs/msprobe-layer-mapping-detail.md).
//
// # Resolution in brief
//
// Each NPU item (module or API entry of dump.json, or module node of a
// print(model) tree) has a scope: the chain of module names from the root. A
// scope trie of each side records, per node, a class (the type name of the
// last item ending there, else the segment text; the root is TopLayer) and
// its items by state in dump order. ConvertScope walks the NPU scope; at each
// node the rules of that node's class whose key starts with the next segment
// are tried longest key first, then the identity; the first key equal to the
// next k segments appends its value (any number of segments) and skips those
// k segments (the classes of skipped nodes are not consulted). The item's
// ordinal among same-state items of its node picks the bench item at the
// rewritten path; "N/A" when there is none.
//
// # Diagnostic codes
//
// Load and Parse report these codes. Errors are rules that can never do what
// they say; warnings are likely mistakes; info is advice.
//
//	code   severity      meaning
//	LM001  error         duplicate class block: PyYAML keeps the last block only
//	LM002  error/warning duplicate child key: PyYAML keeps the last value (warning when both values agree)
//	LM003  error         empty child path
//	LM004  error         empty bench path
//	LM005  warning/error value contains "(": msprobe cuts it there (error when what remains cannot match)
//	LM006  error         whitespace in a child or bench path
//	LM007  error         empty path segment ("a..b", ".a", "a.")
//	LM008  info          identity rule (children keep their name without a rule)
//	LM009  warning       class key is not a string for PyYAML (int, bool, ...): never matches
//	LM010  info          legacy key Cell, renamed to TopLayer by msprobe
//	LM011  error         both Cell and TopLayer: msprobe keeps Cell, the TopLayer block is lost
//	LM012  warning       null Cell block: dropped by msprobe
//	LM013  info          class block without rules
//	LM014  error         file name does not end in .yaml: msprobe refuses it
//	LM015  error         real path has characters msprobe's file check refuses
//
// Package validate adds the LM1xx codes (dead rules, bad targets, shadowed
// rules, conflicts, coverage, suspicious pairs).
package mapping

// Diagnostic codes of Parse and Load.
const (
	CodeDuplicateClass = "LM001"
	CodeDuplicateKey   = "LM002"
	CodeEmptyKey       = "LM003"
	CodeEmptyValue     = "LM004"
	CodeParen          = "LM005"
	CodeSpace          = "LM006"
	CodeEmptySegment   = "LM007"
	CodeIdentity       = "LM008"
	CodeClassNotString = "LM009"
	CodeCellAlias      = "LM010"
	CodeCellOverrides  = "LM011"
	CodeCellNull       = "LM012"
	CodeEmptyClass     = "LM013"
	CodeFileSuffix     = "LM014"
	CodeFilePath       = "LM015"
)
