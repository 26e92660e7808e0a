// Package validate checks a layer_mapping.yaml against the two structures it
// is meant for (print(model) trees or msprobe dump folders read by
// printparse), with the msprobe-exact resolver of package resolve, and
// reports what msprobe would do silently: rules that never fire, targets
// that do not exist, class keys shared by instances that need different
// child maps, and how many NPU modules get a bench partner.
//
// # Finding codes
//
// Findings carry the load diagnostics of package mapping (LM0xx) and these:
//
//	code   check            severity  meaning
//	LM101  dead-rule        error     class key that occurs nowhere on the NPU side (near-miss class suggested)
//	LM102  dead-rule        error     child path that exists under no instance of its class; on an NPU dump
//	                                  folder API entries count (msprobe's own trie of the dump); on a print
//	                                  tree a warning when only the last segment is missing, no module has that
//	                                  name and there is no near miss (it may name an API)
//	LM103  bad-target       error     the rule fires but its rewritten path never exists on the bench side
//	LM104  shadowed-rule    warning   the child path exists but the rule never fires: an ancestor's longer key always wins
//	LM105  conflict         error     a class whose instances need different child maps: a rule fits some instances and leads nowhere in others
//	LM106  coverage         error     coverage below --min-coverage, or no NPU module paired at all (with or without it)
//	LM107  suspicious-pair  warning   resolved partners whose kinds (Linear, Norm, ...) or printed sizes disagree
//	LM108  conflict         info      a shared class whose rule would not fit some instances, escaped there by a longer key of an ancestor
//	LM109  conflict         warning   a rule whose child path exists under only some instances of its class
//	LM110  missing-rule     info      an NPU module without partner whose parent's partner has unclaimed children of its kind
//	LM111  band             info      a drafted line whose comment starts with CHECK (layermap suggest's band)
//	LM112  band             warning   a drafted line whose comment starts with UNSURE; edit the word once reviewed
//	LM113  bad-target       info      a drafted line whose comment starts with "no partner:": its target is missing on purpose,
//	                                  so msprobe leaves the module unmatched (a warning when the target exists)
//
// Coverage counts the NPU modules msprobe would dump (resolve.HasDumpEntry:
// not the root, not containers without forward such as ModuleList in print
// trees); a module is covered when its rewritten path exists on the bench
// side. On msprobe dump folders this is the number of module entries
// msprobe's own api mapping pairs. Unmatched nodes of both sides are
// listed collapsed by repeat group ("decoder.layers.{0-27}.self_attention").
//
// The confidence band is the first word of the comment of every line
// layermap suggest drafts ("sure:", "CHECK (why):", "UNSURE (why):", read
// with mapping.ParseBand); Report.Bands counts them and LM111/LM112 point at
// the lines that are not sure.
package validate
