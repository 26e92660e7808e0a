package msprobe_test

import (
	"fmt"
	"strings"

	"github.com/layermap/layermap/printparse/msprobe"
)

func ExampleScan() {
	src := `{
 "task": "statistics", "level": "mix", "framework": "pytorch", "dump_data_dir": null,
 "data": {
  "Functional.dropout.0.forward": {
   "input_args": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [4, 4],
                   "Max": 1.0, "Min": -1.0, "Mean": 0.0, "Norm": 4.0, "requires_grad": true},
                  {"type": "float", "value": 0.1}, null],
   "input_kwargs": {"inplace": {"type": "bool", "value": false}},
   "output": [{"type": "torch.Tensor", "dtype": "torch.float32", "shape": [4, 4],
               "Max": 1.1, "Min": -1.1, "Mean": NaN, "Norm": 4.4, "requires_grad": true}]
  }
 }
}`
	h, err := msprobe.Scan(strings.NewReader(src), "dump.json", func(e *msprobe.Entry) error {
		fmt.Println(e.Name, e.OpNoNumber, e.CallDirection, e.Direction)
		for _, it := range e.Items {
			fmt.Printf("  %s | %s | %s | rg=%s | max=%s mean=%s | md5=%q\n", it.Name, it.Dtype, it.Shape, it.RequiresGrad, it.Stats[0].PyStr(), it.Stats[2].PyStr(), it.MD5)
		}
		return nil
	})
	fmt.Println(h.Task, h.Entries, err)
	// Output:
	// Functional.dropout.0.forward Functional.dropout 0.forward forward
	//   Functional.dropout.0.forward.input.0 | torch.float32 | [4, 4] | rg=True | max=1.0 mean=0.0 | md5="00000000"
	//   Functional.dropout.0.forward.input.1 | <class 'float'> | [] | rg= | max=0.1 mean=0.1 | md5="81f33594"
	//   Functional.dropout.0.forward.input.2 | None | None | rg= | max=None mean=None | md5=""
	//   Functional.dropout.0.forward.input.inplace | <class 'bool'> | [] | rg= | max=False mean=False | md5="ea0c4734"
	//   Functional.dropout.0.forward.output.0 | torch.float32 | [4, 4] | rg=True | max=1.1 mean=nan | md5="00000000"
	// statistics 1 <nil>
}
