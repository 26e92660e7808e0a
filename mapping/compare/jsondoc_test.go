package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"testing"
)

// jnode is a JSON value that keeps its object keys in order: the
// fixtures below rewrite real dumps and must keep their entry order.
type jnode struct {
	keys  []string
	vals  []*jnode // object members
	arr   []*jnode
	obj   bool
	isArr bool
	raw   json.RawMessage // scalars
}

func (n *jnode) get(k string) *jnode {
	for i, key := range n.keys {
		if key == k {
			return n.vals[i]
		}
	}
	return nil
}

func (n *jnode) set(k string, v *jnode) {
	for i, key := range n.keys {
		if key == k {
			n.vals[i] = v
			return
		}
	}
	n.keys, n.vals = append(n.keys, k), append(n.vals, v)
}

func (n *jnode) clone() *jnode {
	c := &jnode{obj: n.obj, isArr: n.isArr, raw: n.raw, keys: append([]string(nil), n.keys...)}
	for _, v := range n.vals {
		c.vals = append(c.vals, v.clone())
	}
	for _, v := range n.arr {
		c.arr = append(c.arr, v.clone())
	}
	return c
}

func jnum(f float64) *jnode {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		panic("fixture number out of JSON")
	}
	return &jnode{raw: json.RawMessage(strconv.FormatFloat(f, 'g', -1, 64))}
}

func jstr(s string) *jnode {
	b, _ := json.Marshal(s)
	return &jnode{raw: b}
}

func (n *jnode) float(t testing.TB) float64 {
	f, err := strconv.ParseFloat(string(n.raw), 64)
	if err != nil {
		t.Fatalf("fixture: %s is no number", n.raw)
	}
	return f
}

func decodeJ(d *json.Decoder) (*jnode, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &jnode{}
		if t == '{' {
			n.obj = true
			for d.More() {
				k, err := d.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeJ(d)
				if err != nil {
					return nil, err
				}
				n.keys, n.vals = append(n.keys, k.(string)), append(n.vals, v)
			}
		} else {
			n.isArr = true
			n.arr = []*jnode{}
			for d.More() {
				v, err := decodeJ(d)
				if err != nil {
					return nil, err
				}
				n.arr = append(n.arr, v)
			}
		}
		_, err := d.Token()
		return n, err
	case json.Number:
		return &jnode{raw: json.RawMessage(t.String())}, nil
	default:
		b, _ := json.Marshal(t)
		return &jnode{raw: b}, nil
	}
}

func readJ(t testing.TB, path string) *jnode {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	n, err := decodeJ(d)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return n
}

func (n *jnode) write(w io.Writer, indent string) {
	switch {
	case n.obj:
		if len(n.keys) == 0 {
			io.WriteString(w, "{}")
			return
		}
		io.WriteString(w, "{\n")
		for i, k := range n.keys {
			kb, _ := json.Marshal(k)
			fmt.Fprintf(w, "%s %s: ", indent, kb)
			n.vals[i].write(w, indent+" ")
			if i < len(n.keys)-1 {
				io.WriteString(w, ",")
			}
			io.WriteString(w, "\n")
		}
		io.WriteString(w, indent+"}")
	case n.isArr:
		io.WriteString(w, "[")
		for i, v := range n.arr {
			if i > 0 {
				io.WriteString(w, ", ")
			}
			v.write(w, indent+" ")
		}
		io.WriteString(w, "]")
	default:
		w.Write(n.raw)
	}
}

func writeJ(t testing.TB, path string, n *jnode) {
	var b bytes.Buffer
	n.write(&b, "")
	b.WriteByte('\n')
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// leaves maps each row name of a dump's entries to its leaf object (the
// flat entries of the demo dumps: input_args, input_kwargs, output,
// parameters).
func leaves(doc *jnode) map[string]*jnode {
	out := map[string]*jnode{}
	data := doc.get("data")
	for i, e := range data.keys {
		body := data.vals[i]
		for j, k := range body.keys {
			v := body.vals[j]
			switch k {
			case "input_args", "output":
				part := "input"
				if k == "output" {
					part = "output"
				}
				for x, leaf := range v.arr {
					out[fmt.Sprintf("%s.%s.%d", e, part, x)] = leaf
				}
			case "input_kwargs", "parameters":
				part := "input"
				if k == "parameters" {
					part = "parameters"
				}
				for x, kk := range v.keys {
					out[e+"."+part+"."+kk] = v.vals[x]
				}
			}
		}
	}
	return out
}
