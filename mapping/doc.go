// Package mapping is msprobe's layer_mapping.yaml: the model (Mapping,
// ClassRules, Rule), the one YAML loader (Load, Parse; ParseStrict for the
// built-in templates), which keeps every position and reports what msprobe
// would accept silently, the emitter for drafted mappings (Marshal), and
// the sidecar format of module pairs no YAML line can express
// (ModulePair, WritePairs, ReadPairs).
//
// Resolution (rewriting NPU names into bench names exactly as msprobe
// does) is package mapping/resolve; validation, package mapping/validate;
// the comparator, package mapping/compare.
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

// CodeInfo describes a diagnostic or finding code, for help texts.
type CodeInfo struct {
	Code     string
	Severity string // "error", "warning", "info" or "error/warning"
	Check    string // the check that reports it ("load" for Parse and Load)
	Meaning  string
}

// LoadCodes describes the codes of Parse and Load, in code order.
var LoadCodes = []CodeInfo{
	{Code: CodeDuplicateClass, Severity: "error", Check: "load", Meaning: "duplicate class block: PyYAML keeps the last block only"},
	{Code: CodeDuplicateKey, Severity: "error/warning", Check: "load", Meaning: "duplicate child key: PyYAML keeps the last value (warning when both values agree)"},
	{Code: CodeEmptyKey, Severity: "error", Check: "load", Meaning: "empty child path"},
	{Code: CodeEmptyValue, Severity: "error", Check: "load", Meaning: "empty bench path"},
	{Code: CodeParen, Severity: "warning/error", Check: "load", Meaning: "value contains \"(\": msprobe cuts it there (error when what remains cannot match)"},
	{Code: CodeSpace, Severity: "error", Check: "load", Meaning: "whitespace in a child or bench path"},
	{Code: CodeEmptySegment, Severity: "error", Check: "load", Meaning: "empty path segment (\"a..b\", \".a\", \"a.\")"},
	{Code: CodeIdentity, Severity: "info", Check: "load", Meaning: "identity rule (children keep their name without a rule)"},
	{Code: CodeClassNotString, Severity: "warning", Check: "load", Meaning: "class key is not a string for PyYAML (int, bool, ...): never matches"},
	{Code: CodeCellAlias, Severity: "info", Check: "load", Meaning: "legacy key Cell, renamed to TopLayer by msprobe"},
	{Code: CodeCellOverrides, Severity: "error", Check: "load", Meaning: "both Cell and TopLayer: msprobe keeps Cell, the TopLayer block is lost"},
	{Code: CodeCellNull, Severity: "warning", Check: "load", Meaning: "null Cell block: dropped by msprobe"},
	{Code: CodeEmptyClass, Severity: "info", Check: "load", Meaning: "class block without rules"},
	{Code: CodeFileSuffix, Severity: "error", Check: "load", Meaning: "file name does not end in .yaml: msprobe refuses it"},
	{Code: CodeFilePath, Severity: "error", Check: "load", Meaning: "real path has characters msprobe's file check refuses"},
}
