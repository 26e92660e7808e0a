package validate

import "github.com/layermap/layermap/mapping"

// Codes describes the finding codes of Check, in code order (the load
// codes are mapping.LoadCodes).
var Codes = []mapping.CodeInfo{
	{Code: CodeDeadClass, Severity: "error", Check: "dead-rule", Meaning: "class key that occurs nowhere on the NPU side (near-miss class suggested)"},
	{Code: CodeDeadKey, Severity: "error", Check: "dead-rule", Meaning: "child path that exists under no instance of its class (a warning on a print tree when only its last segment is missing and it may name an API)"},
	{Code: CodeBadTarget, Severity: "error", Check: "bad-target", Meaning: "the rule fires but its rewritten path never exists on the bench side"},
	{Code: CodeShadowed, Severity: "warning", Check: "shadowed-rule", Meaning: "the child path exists but the rule never fires: an ancestor's longer key always wins"},
	{Code: CodeConflict, Severity: "error", Check: "conflict", Meaning: "a class whose instances need different child maps: a rule fits some instances and leads nowhere in others"},
	{Code: CodeCoverage, Severity: "error", Check: "coverage", Meaning: "coverage below --min-coverage, or no NPU module paired at all (with or without it)"},
	{Code: CodeSuspicious, Severity: "warning", Check: "suspicious-pair", Meaning: "resolved partners whose kinds (Linear, Norm, ...) or printed sizes disagree"},
	{Code: CodeConflictResolved, Severity: "info", Check: "conflict", Meaning: "a shared class whose rule would not fit some instances, escaped there by a longer key of an ancestor"},
	{Code: CodePartialKey, Severity: "warning", Check: "conflict", Meaning: "a rule whose child path exists under only some instances of its class"},
	{Code: CodeMissingRule, Severity: "info", Check: "missing-rule", Meaning: "an NPU module without partner whose parent's partner has unclaimed children of its kind"},
	{Code: CodeBandCheck, Severity: "info", Check: "band", Meaning: "a drafted line whose comment starts with CHECK: a plausible pair with a doubt, look at its rows before trusting them"},
	{Code: CodeBandUnsure, Severity: "warning", Check: "band", Meaning: "a drafted line whose comment starts with UNSURE: nothing but a prior or a name supports it; edit the word once reviewed"},
	{Code: CodeNoPartner, Severity: "info/warning", Check: "bad-target", Meaning: "a drafted line whose comment starts with \"no partner:\": its target is missing on the bench side on purpose, so msprobe leaves the module unmatched (a warning when the target exists)"},
}
