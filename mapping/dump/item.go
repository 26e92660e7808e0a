// Package dump reads msprobe dump folders: the rank/proc layout, dump.json
// (streamed, every value kind msprobe writes), stack.json, construct.json and
// the tensor files of tensor mode.
package dump

// Entry is one key of dump.json's "data" object with its body flattened
// into rows the way msprobe's compare flattens it (read_op, op_item_parse,
// reorder_index): input rows (args, kwargs, backward input), then
// parameters, then output, then parameters_grad.
type Entry struct {
	Name  string // the dump.json key, e.g. "Functional.conv2d.0.forward"
	Index int    // 0-based position among the entries of the file
	Items []Item
}

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
	// RequiresGrad is "True" or "False", or "" when the item has none.
	RequiresGrad string
	// Stats holds Max, Min, Mean and Norm as written in the dump.
	Stats [4]Value
	// MD5 is the item's md5 (or the CRC msprobe derives for non-tensors).
	MD5 string
	// DataName is the tensor file name in dump_tensor_data, or "-1".
	DataName string
	// NoneItem marks a JSON null leaf (msprobe's NONE-ITEM).
	NoneItem bool
	// Op and Peer are set for torch.distributed.P2POp rows.
	Op, Peer string
}

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
type Value struct {
	Kind ValueKind
	Num  float64 // for Number (and NaN/±Inf)
	Text string  // literal number text, or the string value for String
	Bool bool    // for Bool
}
