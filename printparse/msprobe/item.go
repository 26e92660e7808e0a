package msprobe

import "strings"

// Entry is one key of dump.json's "data" object with its body flattened
// into rows the way msprobe's compare flattens it (read_op, op_item_parse,
// reorder_index): input rows (args, kwargs, backward input), then
// parameters, then output, then parameters_grad.
//
// Scan yields the entries msprobe keeps, in file order, including those
// that flatten to no row (msprobe still counts them in the call orders).
// Scan never reuses an Entry or its Items, so callers may keep them.
type Entry struct {
	Name  string // the dump.json key, e.g. "Functional.conv2d.0.forward"
	Index int    // 0-based position among the entries of the file
	Items []Item
	// Member is the entry's 0-based position among the members of "data"
	// read, those msprobe skips included: where "data" repeats no key,
	// SkimEntry.Index (a skim's position of the name).
	Member int

	// Line is the line of the entry's key in the dump file.
	Line int
	// Offset is the byte offset of the entry's key (its opening quote) in
	// the dump file: SkimEntry.Offset, where EntryReader reads it. When
	// "data" repeats the key, the offset of the occurrence whose body was
	// read (the last).
	Offset int64

	// OpNoNumber, CallDirection and Direction are msprobe's split of the
	// name (ParseData.split_data_name_components), used to build the
	// compare key (backward renumbering, §3.2):
	//   "Functional.relu.0.forward"       -> "Functional.relu", "0.forward", "forward"
	//   "Module.fc.Linear.backward.1"     -> "Module.fc.Linear", "backward.1", "backward"
	//   "Module.fc.Linear.parameters_grad.0" -> "Module.fc.Linear.parameters_grad", "parameters_grad", "parameters_grad"
	//   "Module.fc.Linear.parameters_grad"   -> "Module.fc.Linear", "parameters_grad", "parameters_grad"
	// In a debug.json all three are the entry name.
	OpNoNumber    string
	CallDirection string
	Direction     string
	// ForwardCallOrder and BackwardCallOrder count the earlier entries of
	// the file (those Scan yields) with the same OpNoNumber and direction
	// forward, resp. backward (0-based; msprobe's forward_call_order /
	// backward_call_order). A backward row's key replaces the number in
	// CallDirection by BackwardCallOrder.
	ForwardCallOrder  int
	BackwardCallOrder int
	// HasMD5 is true when a first-level item of the body carries an "md5"
	// key (msprobe's md5_find for this entry).
	HasMD5 bool
}

// Stack joining is left to the caller: the NPU_Stack_Info of an entry is
// ReadStack(...)[e.Name], shown on the entry's first row only.

// Item is one flattened leaf row of an entry.
type Item struct {
	// Name is the row name msprobe uses (full_op_name): the data_name
	// without its extension when there is one, else the structural name
	// ("Tensor.add.0.forward.input.0", "....input.reduction",
	// "Module.fc.Linear.forward.0.parameters.weight").
	Name string
	// Entry is the name of the entry the row belongs to (api_origin_name).
	Entry string
	// State is "input", "output", "parameters", "parameters_grad" or "debug".
	State string
	// Dtype and Shape are rendered as msprobe renders them with Python
	// str(): "torch.float32", "<class 'int'>", "[2, 8]", "[]", "(3,)",
	// "None".
	Dtype string
	Shape string
	// RequiresGrad is "True" or "False", or "" when the item has none
	// (msprobe holds None; the table shows N/A).
	RequiresGrad string
	// Stats holds Max, Min, Mean and Norm as msprobe holds them
	// (gen_op_item): for tensors the item's own keys, where a JSON bool
	// became the string "True"/"False" (Kind String) and a missing key
	// null; for scalars without dtype the raw "value" (a JSON bool stays
	// Kind Bool, a list is Composite); for src/dst/group_src/group_dst
	// items the string str(value); for a ProcessGroup str(group_ranks); for
	// ellipsis "...".
	Stats [4]Value
	// MD5 is the item's md5 when it has one; for src/dst items str(value),
	// for a ProcessGroup str(group_ranks); otherwise msprobe's
	// format(crc32(str(value)), '08x') ("00000000" for a tensor without
	// md5). It is "" for a NONE-ITEM (msprobe holds None).
	MD5 string
	// DataName is the tensor file name in dump_tensor_data, or "-1".
	DataName string
	// Op and Peer are set for torch.distributed.P2POp rows, with P2P:
	// json.dumps of the op's "op" and "peer" values, as msprobe's -da JSON
	// writes them (`"isend"`, `1`; `null` when absent).
	Op, Peer string
	P2P      bool
	// NoneItem marks a JSON null leaf (msprobe's NONE-ITEM).
	NoneItem bool
	// Type is the item's "type" ("torch.Tensor", "int", "slice", ...), ""
	// for a NONE-ITEM.
	Type string
	// Line is the line where the item starts in the dump file; in an
	// entry EntryReader.Read was given no line for, the line counted from
	// the entry name's (1): a message counts it in the file (itemLine).
	Line int
	// entryAt is then the byte offset of the entry's name in the file
	// (never 0: the file starts with its header), else 0.
	entryAt int64
}

// Suffix is msprobe's suffix of the row: Name with every occurrence of the
// entry name removed (Python's str.replace), e.g. ".input.0".
func (it *Item) Suffix() string { return strings.ReplaceAll(it.Name, it.Entry, "") }

// ValueKind tells which JSON value a Value holds.
type ValueKind uint8

// Value kinds.
const (
	Null ValueKind = iota
	Number
	Bool
	String
	NaN
	PosInf
	NegInf
	// Composite is a JSON list or object used where msprobe keeps the raw
	// value (e.g. the statistics of a scalar item whose value is a list);
	// Text holds its Python str(), e.g. "[1, None]".
	Composite
)

// Value is one raw JSON scalar from dump.json. Text keeps the literal
// number text so that it can be rendered exactly as msprobe renders it.
//
// Numbers keep both forms: Num is the parsed float64 (±Inf when the
// literal overflows, then Kind is PosInf/NegInf) and Text the literal as
// written ("0.04065797850489616", "3", "1e-06"); IsInt tells a Python int
// (no fraction or exponent) from a float, and PyStr renders the value as
// msprobe/pandas print it (ints as written, floats by Python repr, "nan",
// "inf"). The NaN, Infinity and -Infinity tokens have Text "NaN",
// "Infinity", "-Infinity". For String and Composite, Text is the string.
// A statistic that is JSON null has Kind Null (msprobe turns it into the
// string "None"). Repr tells a Number whose Text is a float literal
// written as Python's repr of Num (AppendPyFloat), as json.dump writes
// floats: Scan sets it, so that the text can stand for the repr.
type Value struct {
	Kind ValueKind
	Bool bool    // for Bool
	Repr bool    // for Number: Text is AppendPyFloat(Num)
	Num  float64 // for Number (and NaN/±Inf)
	Text string  // literal number text, or the string value for String
}
