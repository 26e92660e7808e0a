// Package resolve is msprobe's layer-mapping resolver: it rewrites
// NPU-side module and API names into the bench-side names exactly as
// msprobe does (msprobe core/compare/layer_mapping: data_scope_parser.py,
// postprocess_pass.py, layer_mapping.py; shared/docs/
// msprobe-layer-mapping-detail.md): the scope tries of both sides (from a
// print(model) tree or a dump folder's dump.json, construct.json and
// stack.json), convert_scope, and the api and data mappings msprobe
// derives from a layer mapping.
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
package resolve
