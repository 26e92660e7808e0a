package msprobe

import (
	"fmt"
	"hash/crc32"
	"strings"
	"testing"
)

// row renders an item compactly for the flattening tables:
// name [state] dtype shape rg=.. stats md5 data [NONE] [p2p op peer].
func row(it Item) string {
	var st []string
	for _, v := range it.Stats {
		st = append(st, v.PyStr())
	}
	s := fmt.Sprintf("%s [%s] %s %s rg=%s %s md5=%s data=%s", it.Name, it.State, it.Dtype, it.Shape, it.RequiresGrad,
		strings.Join(st, ","), it.MD5, it.DataName)
	if it.NoneItem {
		s += " NONE"
	}
	if it.P2P {
		s += " p2p " + it.Op + " " + it.Peer
	}
	return s
}

// crc is the md5 msprobe derives for a non-tensor: crc32 of Python str(value).
func crc(pyStr string) string { return fmt.Sprintf("%08x", crc32.ChecksumIEEE([]byte(pyStr))) }

const tensorA = `{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 3], "Max": 1.5, "Min": -1, "Mean": 0.25, "Norm": 2.0, "requires_grad": true}`

func dumpWith(data string) string {
	return `{"task": "statistics", "level": "mix", "framework": "pytorch", "dump_data_dir": null, "data": {` + data + `}}`
}

func TestFlatten(t *testing.T) {
	tensorRow := func(name, state string) string {
		return name + " [" + state + "] torch.float32 [2, 3] rg=True 1.5,-1,0.25,2.0 md5=00000000 data=-1"
	}
	tests := []struct {
		name string
		data string
		want []string
	}{
		{"args kwargs output order", `"Functional.f.0.forward": {"output": [` + tensorA + `], "input_kwargs": {"alpha": {"type": "float", "value": 1e-06}}, "input_args": [` + tensorA + `], "is_recompute": false}`,
			[]string{
				tensorRow("Functional.f.0.forward.input.0", "input"),
				"Functional.f.0.forward.input.alpha [input] <class 'float'> [] rg= 1e-06,1e-06,1e-06,1e-06 md5=" + crc("1e-06") + " data=-1",
				tensorRow("Functional.f.0.forward.output.0", "output"),
			}},
		{"parameters before output", `"Module.fc.Linear.forward.0": {"input_args": [` + tensorA + `], "output": [` + tensorA + `], "parameters": {"weight": ` + tensorA + `}}`,
			[]string{
				tensorRow("Module.fc.Linear.forward.0.input.0", "input"),
				tensorRow("Module.fc.Linear.forward.0.parameters.weight", "parameters"),
				tensorRow("Module.fc.Linear.forward.0.output.0", "output"),
			}},
		{"backward input and output", `"Functional.relu.0.backward": {"input": [` + tensorA + `], "output": [null, ` + tensorA + `]}`,
			[]string{
				tensorRow("Functional.relu.0.backward.input.0", "input"),
				"Functional.relu.0.backward.output.0 [output] None None rg= None,None,None,None md5= data=-1 NONE",
				tensorRow("Functional.relu.0.backward.output.1", "output"),
			}},
		{"null field and empty containers", `"Torch.x.0.forward": {"input_args": [[], {}, 0, "s", true, 1.5, null], "input_kwargs": null, "output": []}`,
			[]string{
				"Torch.x.0.forward.input.6 [input] None None rg= None,None,None,None md5= data=-1 NONE",
				"Torch.x.0.forward.input [input] None None rg= None,None,None,None md5= data=-1 NONE",
			}},
		{"nested lists and dicts", `"Torch.x.0.forward": {"input_args": [[{"type": "int", "value": 1}, [{"type": "int", "value": 2}]], {"a": {"b": {"type": "str", "value": "mean"}}}]}`,
			[]string{
				"Torch.x.0.forward.input.0.0 [input] <class 'int'> [] rg= 1,1,1,1 md5=" + crc("1") + " data=-1",
				"Torch.x.0.forward.input.0.1.0 [input] <class 'int'> [] rg= 2,2,2,2 md5=" + crc("2") + " data=-1",
				"Torch.x.0.forward.input.1.a.b [input] <class 'str'> [] rg= mean,mean,mean,mean md5=" + crc("mean") + " data=-1",
			}},
		{"parameters_grad new style", `"Module.emb.Embedding.parameters_grad.0": {"weight": [` + tensorA + `], "bias": [` + tensorA + `, ` + tensorA + `]}`,
			[]string{
				tensorRow("Module.emb.Embedding.parameters_grad.0.weight", "parameters_grad"),
				tensorRow("Module.emb.Embedding.parameters_grad.0.bias", "parameters_grad"),
				tensorRow("Module.emb.Embedding.parameters_grad.0.bias", "parameters_grad"),
			}},
		{"parameters_grad old style", `"Module.fc.Linear.parameters_grad": {"weight": [` + tensorA + `]}`,
			[]string{tensorRow("Module.fc.Linear.parameters_grad.weight", "parameters_grad")}},
		{"parameters_grad key keeps list names", `"Module.m.M.forward.0": {"input_args": [{"x.parameters_grad": [` + tensorA + `]}]}`,
			[]string{tensorRow("Module.m.M.forward.0.input.0.x.parameters_grad", "input")}},
		{"data_name gives the row name", `"Tensor.t.0.forward": {"input_args": [{"type": "torch.Tensor", "dtype": "torch.float16", "shape": [1], "Max": 1, "Min": 1, "Mean": 1, "Norm": 1, "requires_grad": false, "data_name": "Tensor.t.0.forward.input.0.pt"}, {"type": "torch.Tensor", "dtype": "torch.int8", "shape": [], "data_name": ""}, {"type": "torch.Tensor", "dtype": "torch.int8", "shape": [], "data_name": "noext"}]}`,
			[]string{
				"Tensor.t.0.forward.input.0 [input] torch.float16 [1] rg=False 1,1,1,1 md5=00000000 data=Tensor.t.0.forward.input.0.pt",
				"Tensor.t.0.forward.input.1 [input] torch.int8 [] rg= None,None,None,None md5=00000000 data=-1",
				"noext [input] torch.int8 [] rg= None,None,None,None md5=00000000 data=noext",
			}},
		{"special types", `"Tensor.__getitem__.0.forward": {"input_args": [
			{"type": "slice", "value": [1, null, 2]}, {"type": "slice", "value": [[1, 2], [3, 4]]}, {"type": "slice"},
			{"type": "ellipsis", "value": "..."},
			{"type": "torch.Size", "value": [3, 4]},
			{"type": "torch.memory_format", "format": "contiguous_format"},
			{"type": "torch.ProcessGroup", "group_ranks": [0, 1], "group_id": "abc"},
			{"type": "torch.dtype", "value": "torch.float16"},
			{"type": "bool", "value": true},
			{"type": "weird", "value": [0, 2.5, null, "s", {"k": false}]},
			{"type": "int", "value": 7, "dtype": ""}
			], "input_kwargs": {"src": {"type": "int", "value": 1}, "group_dst": {"type": "int", "value": ""}}}`,
			[]string{
				"Tensor.__getitem__.0.forward.input.0 [input] slice (3,) rg= None,None,None,None md5=" + crc("[1, None, 2]") + " data=-1",
				"Tensor.__getitem__.0.forward.input.1 [input] slice (2, 2) rg= None,None,None,None md5=" + crc("[[1, 2], [3, 4]]") + " data=-1",
				"Tensor.__getitem__.0.forward.input.2 [input] slice () rg= None,None,None,None md5=00000000 data=-1",
				"Tensor.__getitem__.0.forward.input.3 [input] ellipsis [] rg= ...,...,...,... md5=" + crc("...") + " data=-1",
				"Tensor.__getitem__.0.forward.input.4 [input] torch.Size [3, 4] rg= None,None,None,None md5=" + crc("[3, 4]") + " data=-1",
				"Tensor.__getitem__.0.forward.input.5 [input] <class 'NoneType'> [] rg= None,None,None,None md5=00000000 data=-1",
				"Tensor.__getitem__.0.forward.input.6 [input] torch.ProcessGroup [] rg= [0, 1],[0, 1],[0, 1],[0, 1] md5=[0, 1] data=-1",
				"Tensor.__getitem__.0.forward.input.7 [input] <class 'str'> [] rg= torch.float16,torch.float16,torch.float16,torch.float16 md5=" + crc("torch.float16") + " data=-1",
				"Tensor.__getitem__.0.forward.input.8 [input] <class 'bool'> [] rg= True,True,True,True md5=" + crc("True") + " data=-1",
				"Tensor.__getitem__.0.forward.input.9 [input] <class 'list'> [] rg= [0, 2.5, None, 's', {'k': False}],[0, 2.5, None, 's', {'k': False}],[0, 2.5, None, 's', {'k': False}],[0, 2.5, None, 's', {'k': False}] md5=" + crc("[0, 2.5, None, 's', {'k': False}]") + " data=-1",
				"Tensor.__getitem__.0.forward.input.10 [input] <class 'int'> [] rg= 7,7,7,7 md5=" + crc("7") + " data=-1",
				"Tensor.__getitem__.0.forward.input.src [input] int [] rg= 1,1,1,1 md5=1 data=-1",
				// str(value) is "", so the md5 falls back to crc32("").
				"Tensor.__getitem__.0.forward.input.group_dst [input] int [] rg= ,,, md5=00000000 data=-1",
			}},
		{"bool and md5 tensor fields", `"Torch.isfinite.0.forward": {"output": [{"type": "torch.Tensor", "dtype": "torch.bool", "shape": [4], "Max": true, "Min": false, "Mean": null, "Norm": null, "requires_grad": false, "md5": "8a0cf1e2"}]}`,
			[]string{"Torch.isfinite.0.forward.output.0 [output] torch.bool [4] rg=False True,False,None,None md5=8a0cf1e2 data=-1"}},
		{"NaN and infinities", `"Torch.log.0.forward": {"output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [4], "Max": NaN, "Min": -Infinity, "Mean": Infinity, "Norm": 1e400, "requires_grad": false}]}`,
			[]string{"Torch.log.0.forward.output.0 [output] torch.float32 [4] rg=False nan,-inf,inf,inf md5=00000000 data=-1"}},
		{"P2POp", `"Distributed.batch_isend_irecv.0.forward": {"input_args": [[
			{"class_type": "torch.distributed.P2POp", "tensor": ` + tensorA + `, "op": "isend", "peer": 1, "tag": 0, "group_id": "x"},
			{"class_type": "torch.distributed.P2POp", "tensor": null, "op": "irecv"}]]}`,
			[]string{
				tensorRow("Distributed.batch_isend_irecv.0.forward.input.0.0", "input") + " p2p \"isend\" 1",
				"Distributed.batch_isend_irecv.0.forward.input.0.1 [input] None None rg= None,None,None,None md5= data=-1 NONE p2p \"irecv\" null",
			}},
		{"duplicate key keeps first position, last value", `"Torch.d.0.forward": {"input_kwargs": {"a": {"type": "int", "value": 1}, "b": {"type": "int", "value": 2}, "a": {"type": "int", "value": 3}}}`,
			[]string{
				"Torch.d.0.forward.input.a [input] <class 'int'> [] rg= 3,3,3,3 md5=" + crc("3") + " data=-1",
				"Torch.d.0.forward.input.b [input] <class 'int'> [] rg= 2,2,2,2 md5=" + crc("2") + " data=-1",
			}},
		{"number literals", `"Torch.n.0.forward": {"input_args": [{"type": "int", "value": -0}, {"type": "float", "value": 1E5}, {"type": "float", "value": 2.50}, {"type": "int", "value": 123456789012345678901234567890}]}`,
			[]string{
				"Torch.n.0.forward.input.0 [input] <class 'int'> [] rg= 0,0,0,0 md5=" + crc("0") + " data=-1",
				"Torch.n.0.forward.input.1 [input] <class 'float'> [] rg= 100000.0,100000.0,100000.0,100000.0 md5=" + crc("100000.0") + " data=-1",
				"Torch.n.0.forward.input.2 [input] <class 'float'> [] rg= 2.5,2.5,2.5,2.5 md5=" + crc("2.5") + " data=-1",
				"Torch.n.0.forward.input.3 [input] <class 'int'> [] rg= 123456789012345678901234567890,123456789012345678901234567890,123456789012345678901234567890,123456789012345678901234567890 md5=" + crc("123456789012345678901234567890") + " data=-1",
			}},
		{"escapes in names", `"Torch.e.0.forward": {"input_kwargs": {"k\u00e9\"y": {"type": "str", "value": "a\nb"}}}`,
			[]string{"Torch.e.0.forward.input.ké\"y [input] <class 'str'> [] rg= a\nb,a\nb,a\nb,a\nb md5=" + crc("a\nb") + " data=-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			es, _, err := scanString("dump.json", dumpWith(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if len(es) != 1 {
				t.Fatalf("%d entries", len(es))
			}
			var got []string
			for _, it := range es[0].Items {
				got = append(got, row(it))
				if it.Entry != es[0].Name {
					t.Errorf("item entry %q", it.Entry)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestEntrySplitAndCallOrders(t *testing.T) {
	data := `"Functional.relu.0.forward": {},
	"Functional.relu.1.forward": {},
	"Tensor.weird_entry": {"input_args": [` + tensorA + `]},
	"Functional.relu.3.backward": {},
	"Functional.relu.2.backward": {},
	"Module.fc.Linear.forward.0": {},
	"Module.fc.Linear.backward.0": {},
	"Module.fc.Linear.parameters_grad": {},
	"Module.emb.E.parameters_grad.0": {},
	"forward.0": {},
	"parameters_grad": {}`
	es, h, err := scanString("dump.json", dumpWith(data))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, fmt.Sprintf("%d %s|%s|%s f%d b%d", e.Index, e.OpNoNumber, e.CallDirection, e.Direction, e.ForwardCallOrder, e.BackwardCallOrder))
	}
	want := []string{
		"0 Functional.relu|0.forward|forward f0 b0",
		"1 Functional.relu|1.forward|forward f1 b0",
		"2 Functional.relu|3.backward|backward f2 b0",
		"3 Functional.relu|2.backward|backward f2 b1",
		"4 Module.fc.Linear|forward.0|forward f0 b0",
		"5 Module.fc.Linear|backward.0|backward f1 b0",
		"6 Module.fc.Linear|parameters_grad|parameters_grad f1 b1",
		"7 Module.emb.E.parameters_grad|parameters_grad|parameters_grad f0 b0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if h.Entries != 11 || strings.Join(h.Skipped, ",") != "Tensor.weird_entry,forward.0,parameters_grad" {
		t.Errorf("header entries %d skipped %q", h.Entries, h.Skipped)
	}
}

func TestDebugJSON(t *testing.T) {
	src := `{"task": "statistics", "level": "debug", "framework": "pytorch", "data": {
	"x.0.debug": [` + tensorA + `, {"type": "int", "value": 3}],
	"free name": {"input_args": [` + tensorA + `]},
	"list body": [` + tensorA + `]}}`
	es, _, err := scanString("/some/debug.json", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 3 || len(es[2].Items) != 0 {
		t.Fatalf("%d entries", len(es))
	}
	if e := es[0]; e.OpNoNumber != "x.0.debug" || e.Direction != "x.0.debug" || len(e.Items) != 2 ||
		e.Items[0].Name != "x.0.debug.0" || e.Items[0].State != "debug" || e.Items[1].Name != "x.0.debug.1" {
		t.Errorf("debug entry %+v", e)
	}
	if e := es[1]; len(e.Items) != 1 || e.Items[0].Name != "free name.input.0" {
		t.Errorf("free entry %+v", e)
	}
	var h Header
	if _, h, _ = scanString("debug.json", `{"data": {"a.debug": {"x": [{"y": {"md5": "1"}}]}}}`); !h.MD5 {
		t.Error("debug.json: nested md5 not found")
	}
	// The same content in a dump.json is refused: entry bodies must be objects.
	if _, _, err := scanString("dump.json", src); err == nil || !strings.Contains(err.Error(), "dump.json:2: entry \"x.0.debug\": expected an object as the entry body, found a list") {
		t.Errorf("dump.json err = %v", err)
	}
}

func TestMD5Detection(t *testing.T) {
	for _, tt := range []struct {
		data string
		want bool
	}{
		{`"A.0.forward": {"input_args": [` + tensorA + `]}`, false},
		{`"A.0.forward": {"input_args": [{"type": "torch.Tensor", "dtype": "x", "shape": [], "md5": "01234567"}]}`, true},
		{`"A.0.forward": {"input_kwargs": {"md5": 1}}`, true},
		{`"A.parameters_grad": {"w": [{"type": "torch.Tensor", "dtype": "x", "shape": [], "md5": "01234567"}]}`, true},
		// Nested deeper than the first level: not found, as in msprobe.
		{`"A.0.forward": {"input_args": [[{"type": "torch.Tensor", "dtype": "x", "shape": [], "md5": "01234567"}]]}`, false},
	} {
		es, h, err := scanString("dump.json", dumpWith(tt.data))
		if err != nil {
			t.Fatal(err)
		}
		if h.MD5 != tt.want || es[0].HasMD5 != tt.want {
			t.Errorf("%s: MD5 %v/%v, want %v", tt.data, h.MD5, es[0].HasMD5, tt.want)
		}
	}
}

func TestDepthLimit(t *testing.T) {
	nest := func(k int) string {
		return `"A.0.forward": {"input_args": ` + strings.Repeat("[", k) + "null" + strings.Repeat("]", k) + `}`
	}
	// input_args itself is depth 0, so k lists put the null at depth k.
	es, _, err := scanString("dump.json", dumpWith(nest(400)))
	if err != nil || len(es[0].Items) != 1 || es[0].Items[0].Name != "A.0.forward.input"+strings.Repeat(".0", 400) {
		t.Fatalf("depth 400: %v", err)
	}
	_, _, err = scanString("dump.json", dumpWith(nest(401)))
	if err == nil || !strings.Contains(err.Error(), "dump.json:1: entry \"A.0.forward\": expected at most 400 levels") {
		t.Errorf("depth 401: err = %v", err)
	}
}
