package msprobe

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// nameCases is each name with the pattern it splits into: text is the
// name without its number, cut where the number goes (-1: none).
var nameCases = []struct {
	name string
	text string
	cut  int
	num  uint32
}{
	{"Functional.linear.5.forward", "Functional.linear..forward", 18, 5},
	{"Module.layers.0.mlp.MLP.forward.3", "Module.layers.0.mlp.MLP.forward.", 32, 3},
	{"Tensor.__add__.0.forward", "Tensor.__add__..forward", 15, 0},
	{"Module.x.parameters_grad", "Module.x.parameters_grad", -1, 0},
	// Zero-padded parts are text; an earlier canonical part still counts.
	{"a.007.b", "a.007.b", -1, 0},
	{"a.1.007", "a..007", 2, 1},
	{"a.0999", "a.0999", -1, 0},
	{"a.00", "a.00", -1, 0},
	{"a.0", "a.", 2, 0},
	{"0", "", 0, 0},
	{"1.2", "1.", 2, 2},
	{"1.a", ".a", 0, 1},
	{"a.1.2", "a.1.", 4, 2},
	{"", "", -1, 0},
	{".", ".", -1, 0},
	{"..", "..", -1, 0},
	{"a..b", "a..b", -1, 0},
	// Ten digits is past maxNameNumber; nine is the most.
	{"a.1000000000", "a.1000000000", -1, 0},
	{"a.9999999999", "a.9999999999", -1, 0},
	{"a.999999999", "a.", 2, 999_999_999},
	{"a.100000000", "a.", 2, 100_000_000},
	{"a.99999999.b", "a..b", 2, 99_999_999},
	{"a.12345678", "a.", 2, 12_345_678},
	{"a.10", "a.", 2, 10},
	// Only whole parts of ASCII digits.
	{"a1.b", "a1.b", -1, 0},
	{"a.-1", "a.-1", -1, 0},
	{"a.+1", "a.+1", -1, 0},
	{"a. 1", "a. 1", -1, 0},
	{"a.1e3", "a.1e3", -1, 0},
	{"a.٣", "a.٣", -1, 0},
	{"层.3.名", "层..名", 4, 3},
	{"a\x00.4.b", "a\x00..b", 3, 4},
	{"\x00", "\x00", -1, 0},
	{"a.\x00", "a.\x00", -1, 0},
	{"a.1.", "a..", 2, 1},
	{".1", ".", 1, 1},
	{"1.", ".", 0, 1},
}

// nearMisses returns strings close to name that are not name.
func nearMisses(name string) []string {
	c := []string{"", name + "0", name + "x", "x" + name, "0" + name, name + ".", "." + name}
	if len(name) > 0 {
		c = append(c, name[1:], name[:len(name)-1])
	}
	if lo, hi, _ := splitNumber(name); lo >= 0 {
		num := name[lo:hi]
		c = append(c,
			name[:lo]+"0"+num+name[hi:], // "05" for 5
			name[:lo]+name[hi:],         // number gone
			name[:lo]+num+num+name[hi:],
			name[:lo]+strings.Repeat("x", hi-lo)+name[hi:], // not digits
		)
		v, _ := strconv.ParseUint(num, 10, 64)
		c = append(c, name[:lo]+strconv.FormatUint(v+1, 10)+name[hi:])
		if v > 0 {
			c = append(c, name[:lo]+strconv.FormatUint(v-1, 10)+name[hi:])
		}
	}
	out := c[:0]
	for _, s := range c {
		if s != name {
			out = append(out, s)
		}
	}
	return out
}

func TestNames(t *testing.T) {
	all := make([]string, len(nameCases))
	for i, c := range nameCases {
		all[i] = c.name
	}
	n := NamesOf(all)
	if n.Len() != len(all) {
		t.Fatalf("Len = %d, want %d", n.Len(), len(all))
	}
	for i, c := range nameCases {
		lo, hi, num := splitNumber(c.name)
		text, cut := c.name, lo
		if lo >= 0 {
			text = c.name[:lo] + c.name[hi:]
		}
		if text != c.text || cut != c.cut || num != c.num {
			t.Errorf("splitNumber(%q): text %q cut %d num %d, want %q %d %d", c.name, text, cut, num, c.text, c.cut, c.num)
		}
		p := n.pt.pats[n.refs.At(i).pat]
		if p.text != c.text || int(p.cut) != c.cut || n.refs.At(i).num != c.num {
			t.Errorf("%q stored as %q cut %d num %d, want %q %d %d", c.name, p.text, p.cut, n.refs.At(i).num, c.text, c.cut, c.num)
		}
		if got := n.At(i); got != c.name {
			t.Errorf("At(%d) = %q, want %q", i, got, c.name)
		}
		if !n.Is(i, c.name) {
			t.Errorf("Is(%d, %q) = false", i, c.name)
		}
		for _, x := range nearMisses(c.name) {
			if n.Is(i, x) {
				t.Errorf("Is(%d [%q], %q) = true", i, c.name, x)
			}
		}
		// Every other case name is a miss too.
		for _, x := range all {
			if x != c.name && n.Is(i, x) {
				t.Errorf("Is(%d [%q], %q) = true", i, c.name, x)
			}
		}
		prefix := make([]byte, 4, 64)
		copy(prefix, "pre:")
		if got := string(n.Append(prefix, i)); got != "pre:"+c.name {
			t.Errorf("Append(pre:, %d) = %q, want %q", i, got, "pre:"+c.name)
		}
		if got := string(n.Append(nil, i)); got != c.name {
			t.Errorf("Append(nil, %d) = %q, want %q", i, got, c.name)
		}
	}
}

func TestNamesPatterns(t *testing.T) {
	gen := func(n int, format string) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf(format, i))
		}
		return out
	}
	for _, c := range []struct {
		what  string
		names []string
		want  int
	}{
		{"one call count", gen(1000, "Functional.linear.%d.forward"), 1},
		{"forward and backward", append(gen(1000, "Functional.linear.%d.forward"), gen(1000, "Functional.linear.%d.backward")...), 2},
		{"last number only", gen(1000, "Module.layers.%d.mlp.MLP.forward.0"), 1000},
		{"layers by call count", func() []string {
			var out []string
			for l := range 10 {
				for k := range 5 {
					out = append(out, fmt.Sprintf("Module.layers.%d.mlp.MLP.forward.%d", l, k))
				}
			}
			return out
		}(), 10},
		{"zero-padded apart", []string{"a.5", "a.05", "a.005", "a.6"}, 3},
		{"too large apart", []string{"a.1000000000", "a.1000000001", "a.999999999", "a.1"}, 3},
		{"no number repeated", []string{"x", "x", "Module.x.parameters_grad", "Module.x.parameters_grad"}, 2},
		// Same text, number cut at different places.
		{"cut matters", []string{"a.1.b", "a.b.1", "a.b.2", "1.a.b"}, 3},
		{"no number vs number cut out", []string{"a.", "a.1", "a..", "a..1", "a.1."}, 5},
		{"empty and zero", []string{"", "0", "1", "", "00"}, 3},
		{"rows: the call count", func() []string {
			var out []string
			for k := range 100 {
				out = append(out, fmt.Sprintf("Module.layers.3.mlp.MLP.forward.%d.input.0", k), fmt.Sprintf("Module.layers.3.mlp.MLP.forward.%d.output.0", k),
					fmt.Sprintf("Tensor.__add__.%d.forward.input.1", k), fmt.Sprintf("Module.layers.3.mlp.MLP.forward.%d.parameters.weight", k))
			}
			return out
		}(), 4},
		{"rows: a number last only", []string{"a.1", "a.2", "a.b.3"}, 2},
	} {
		if strings.HasPrefix(c.what, "rows:") {
			p := RowPatterns()
			for _, s := range c.names {
				if id, num := p.Add(s); p.Name(id, num) != s {
					t.Errorf("%s: %q is %q", c.what, s, p.Name(id, num))
				}
			}
			if got := p.Len(); got != c.want {
				t.Errorf("%s: Len = %d, want %d", c.what, got, c.want)
			}
			continue
		}
		n := NamesOf(c.names)
		if got := n.Patterns(); got != c.want {
			t.Errorf("%s: Patterns = %d, want %d", c.what, got, c.want)
		}
		if got := n.Strings(); strings.Join(got, "\n") != strings.Join(c.names, "\n") || len(got) != len(c.names) {
			t.Errorf("%s: Strings differ", c.what)
		}
	}
}

func TestNamesRoundTrip(t *testing.T) {
	var nilNames *Names
	if nilNames.Len() != 0 || nilNames.Patterns() != 0 || len(nilNames.Strings()) != 0 {
		t.Errorf("nil Names: Len %d Patterns %d", nilNames.Len(), nilNames.Patterns())
	}
	nilNames.Done() // must not panic

	empty := NamesOf(nil)
	if empty.Len() != 0 || empty.Patterns() != 0 || len(empty.Strings()) != 0 {
		t.Errorf("empty Names: Len %d Patterns %d", empty.Len(), empty.Patterns())
	}

	names := []string{
		"Functional.linear.0.forward", "Functional.linear.1.forward",
		"Module.layers.0.mlp.MLP.forward.0", "Tensor.__add__.0.forward",
		"Module.x.parameters_grad", "a.007.b", "",
	}
	n := NamesOf(names)
	check := func(when string, want []string) {
		t.Helper()
		got := n.Strings()
		if len(got) != len(want) {
			t.Fatalf("%s: Len %d, want %d", when, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] || !n.Is(i, want[i]) {
				t.Errorf("%s: name %d = %q (Is %v), want %q", when, i, got[i], n.Is(i, want[i]), want[i])
			}
		}
		k := 0
		for i, name := range n.All() {
			if i != k || name != want[i] {
				t.Errorf("%s: All yields %d %q, want %d %q", when, i, name, k, want[k])
			}
			k++
			if k == 3 {
				break // All stops when told
			}
		}
		if k != min(3, len(want)) {
			t.Errorf("%s: All yields %d names, want %d", when, k, min(3, len(want)))
		}
	}
	check("built", names)
	pats := n.Patterns()

	// After Done, known patterns are found again and not added twice.
	n.Done()
	n.Done()
	check("done", names)
	more := []string{
		"Functional.linear.77.forward", "Module.layers.0.mlp.MLP.forward.9",
		"Tensor.__add__.123456789.forward", "Module.x.parameters_grad", "a.007.b", "",
	}
	for _, s := range more {
		n.AddString(s)
	}
	names = append(names, more...)
	check("added after Done", names)
	if got := n.Patterns(); got != pats {
		t.Errorf("Patterns after Done and known names = %d, want %d", got, pats)
	}

	// A new pattern after Done is added once.
	n.Done()
	n.AddString("Functional.linear.3.backward")
	n.AddString("Functional.linear.4.backward")
	names = append(names, "Functional.linear.3.backward", "Functional.linear.4.backward")
	check("new after Done", names)
	if got := n.Patterns(); got != pats+1 {
		t.Errorf("Patterns after a new pattern = %d, want %d", got, pats+1)
	}
}

// Add copies what it keeps: the caller may reuse its buffer.
func TestNamesAddCopies(t *testing.T) {
	n := &Names{}
	buf := []byte("Module.x.parameters_grad")
	n.Add(buf)
	copy(buf, "XXXXXXXXXXXXXXXXXXXXXXXX")
	buf = append(buf[:0], "Functional.linear.5.forward"...)
	n.Add(buf)
	copy(buf, "Functional.linear.6.backwar")
	if got := n.At(0); got != "Module.x.parameters_grad" {
		t.Errorf("At(0) = %q after the buffer changed", got)
	}
	if got := n.At(1); got != "Functional.linear.5.forward" {
		t.Errorf("At(1) = %q after the buffer changed", got)
	}
	n.Add(nil)
	n.Add([]byte{})
	if n.At(2) != "" || n.At(3) != "" || !n.Is(3, "") {
		t.Errorf("empty names: %q %q", n.At(2), n.At(3))
	}
}

// Is and Append into room allocate nothing; At allocates only for a
// name with a number.
func TestNamesAllocs(t *testing.T) {
	n := NamesOf([]string{"Functional.linear.5.forward", "Module.x.parameters_grad"})
	buf := make([]byte, 0, 64)
	for _, c := range []struct {
		what string
		f    func()
		want float64
	}{
		{"Is", func() { n.Is(0, "Functional.linear.5.forward") }, 0},
		{"Append", func() { buf = n.Append(buf[:0], 0) }, 0},
		{"At without number", func() { _ = n.At(1) }, 0},
		{"At with number", func() { sinkName = n.At(0) }, 1},
	} {
		if got := testing.AllocsPerRun(100, c.f); got != c.want {
			t.Errorf("%s: %v allocs, want %v", c.what, got, c.want)
		}
	}
}

var sinkName string

// refSplit is splitNumber written plainly, to check it against.
func refSplit(name string) (lo, hi int, num uint32) { return refSplitFrom(name, 1) }

// refRowSplit is splitRowNumber written plainly.
func refRowSplit(name string) (lo, hi int, num uint32) {
	if lo, hi, num := refSplitFrom(name, 2); lo >= 0 {
		return lo, hi, num
	}
	return refSplit(name)
}

// refSplitFrom finds the last number among the parts of name but the
// last skip-1.
func refSplitFrom(name string, skip int) (lo, hi int, num uint32) {
	parts := strings.Split(name, ".")
	for j := len(parts) - skip; j >= 0; j-- {
		p := parts[j]
		if p == "" || len(p) > 9 || len(p) > 1 && p[0] == '0' || strings.Trim(p, "0123456789") != "" {
			continue
		}
		v, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			panic(err)
		}
		lo = len(strings.Join(parts[:j], "."))
		if j > 0 {
			lo++
		}
		return lo, lo + len(p), uint32(v)
	}
	return -1, -1, 0
}

func FuzzNames(f *testing.F) {
	var seed []string
	for _, c := range nameCases {
		seed = append(seed, c.name)
		f.Add(c.name)
	}
	f.Add(strings.Join(seed, "\n"))
	f.Add("Functional.linear.5.forward\nFunctional.linear.6.forward\nFunctional.linear.05.forward")
	f.Add("a.1\na.1\na.2\n\na.01\na.1000000000\na.999999999")
	f.Fuzz(func(t *testing.T, s string) {
		names := strings.Split(s, "\n")
		a := &Names{}
		half := len(names) / 2
		for i, name := range names {
			b := []byte(name)
			a.Add(b)
			copy(b, strings.Repeat("9", len(b))) // Add must have copied
			if i == half {
				a.Done()
			}
		}
		b := NamesOf(names)
		if a.Len() != len(names) || b.Len() != len(names) {
			t.Fatalf("Len %d %d, want %d", a.Len(), b.Len(), len(names))
		}

		// Patterns are the distinct (text, cut) pairs, RowPatterns' with
		// the row names' number.
		keys := patternKeys(t, names, "splitNumber", splitNumber, refSplit)
		if a.Patterns() != len(keys) || b.Patterns() != len(keys) {
			t.Fatalf("Patterns %d %d, want %d", a.Patterns(), b.Patterns(), len(keys))
		}
		rkeys := patternKeys(t, names, "splitRowNumber", splitRowNumber, refRowSplit)

		// Patterns: Find answers as Add did, and a name it finds is
		// the name AppendName makes of its answer.
		for _, p := range []*Patterns{{}, RowPatterns()} {
			added := make([][2]uint32, len(names))
			for i, name := range names {
				id, num := p.Add(name)
				added[i] = [2]uint32{uint32(id), num}
			}
			for i, name := range names {
				id, num, ok := p.Find(name)
				if !ok || [2]uint32{uint32(id), num} != added[i] {
					t.Fatalf("Patterns.Find(%q) = %d, %d, %v; Add gave %v", name, id, num, ok, added[i])
				}
				for _, x := range append(nearMisses(name), name+"x", name+".1", "1."+name) {
					if id, num, ok := p.Find(x); ok && string(p.AppendName(nil, id, num)) != x {
						t.Fatalf("Patterns.Find(%q) = %d, %d: that is %q", x, id, num, p.AppendName(nil, id, num))
					}
				}
				if got := string(p.AppendName([]byte("pre"), id, num)); got != "pre"+name {
					t.Fatalf("AppendName(pre, %d, %d) = %q, want %q", id, num, got, "pre"+name)
				}
				if got := p.Name(id, num); got != name {
					t.Fatalf("Name(%d, %d) = %q, want %q", id, num, got, name)
				}
			}
			if want := map[bool]int{false: len(keys), true: len(rkeys)}[p.rows]; p.Len() != want {
				t.Fatalf("Patterns (rows %v): Len %d, want %d", p.rows, p.Len(), want)
			}
			// Done drops the index: Find finds nothing, names are still
			// made, and adding again gives the same patterns.
			p.Done()
			for i, name := range names {
				if _, _, ok := p.Find(name); ok {
					t.Fatalf("Find(%q) after Done found it", name)
				}
				if got := p.Name(int32(added[i][0]), added[i][1]); got != name {
					t.Fatalf("Name after Done = %q, want %q", got, name)
				}
			}
			for i, name := range names {
				if id, num := p.Add(name); [2]uint32{uint32(id), num} != added[i] {
					t.Fatalf("Add(%q) after Done = %d, %d; first %v", name, id, num, added[i])
				}
			}
		}

		for _, n := range []*Names{a, b} {
			for i, name := range names {
				if got := n.At(i); got != name {
					t.Fatalf("At(%d) = %q, want %q", i, got, name)
				}
				if got := string(n.Append([]byte("pre"), i)); got != "pre"+name {
					t.Fatalf("Append(pre, %d) = %q, want %q", i, got, "pre"+name)
				}
				if !n.Is(i, name) {
					t.Fatalf("Is(%d, %q) = false", i, name)
				}
				if n.Is(i, name+"x") {
					t.Fatalf("Is(%d [%q], %q) = true", i, name, name+"x")
				}
				for _, x := range nearMisses(name) {
					if n.Is(i, x) {
						t.Fatalf("Is(%d [%q], %q) = true", i, name, x)
					}
				}
				// Every other name in the list (pairwise, so bounded).
				for j := 0; j < len(names) && j < 64; j++ {
					if names[j] != name && n.Is(i, names[j]) {
						t.Fatalf("Is(%d [%q], %q) = true", i, name, names[j])
					}
				}
				// One digit changed is another name.
				for k := 0; k < len(name); k++ {
					if c := name[k]; c >= '0' && c <= '9' {
						m := name[:k] + string('0'+(c-'0'+1)%10) + name[k+1:]
						if n.Is(i, m) {
							t.Fatalf("Is(%d [%q], %q) = true", i, name, m)
						}
					}
				}
			}
			checkFind(t, n, names)
			want := refExtends(names)
			if got := n.Extends(); got != want {
				t.Fatalf("Extends = %v, want %v", got, want)
			}
			n.Unindex() // the index is made again as needed
			if got := n.Extends(); got != want {
				t.Fatalf("Extends after Unindex = %v, want %v", got, want)
			}
			checkFind(t, n, names)
		}
	})
}

// patternKeys returns the distinct (text, cut) pairs of names as split
// cuts them, failing t where split and its reference ref differ.
func patternKeys(t *testing.T, names []string, what string, split, ref func(string) (int, int, uint32)) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	for _, name := range names {
		lo, hi, num := split(name)
		rlo, rhi, rnum := ref(name)
		if lo != rlo || hi != rhi || num != rnum {
			t.Fatalf("%s(%q) = %d %d %d, want %d %d %d", what, name, lo, hi, num, rlo, rhi, rnum)
		}
		if lo < 0 {
			keys["-\x00"+name] = true
		} else {
			keys[strconv.Itoa(lo)+"\x00"+name[:lo]+name[hi:]] = true
		}
	}
	return keys
}

// refExtends is Extends by brute force: a name's prefix before one of its
// '.' is a name.
func refExtends(names []string) bool {
	set := map[string]bool{}
	for _, s := range names {
		set[s] = true
	}
	for _, s := range names {
		for k := range len(s) {
			if s[k] == '.' && set[s[:k]] {
				return true
			}
		}
	}
	return false
}

// TestNamesExtends: a prefix before the number (the same for all names
// of a pattern), one that keeps it (a name of the pattern with the tail
// cut), and near misses: the same pattern with another number, a prefix
// not ending at a '.', a number that is no call number.
func TestNamesExtends(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		names []string
		want  bool
	}{
		{nil, false},
		{[]string{""}, false},
		{[]string{"", ".a"}, true},
		{[]string{"a", "a"}, false},
		{[]string{"a", "a.b"}, true},
		{[]string{"a", "ab"}, false},
		{[]string{"a.", "a"}, true},
		{[]string{"Functional.linear", "Functional.linear.5.forward"}, true},
		{[]string{"Functional.linear.5", "Functional.linear.5.forward"}, true},
		{[]string{"Functional.linear.6", "Functional.linear.5.forward"}, false},
		{[]string{"Functional.linear.5.forward", "Functional.linear.5"}, true},
		{[]string{"Functional.linear.5.forward", "Functional.linear.5.forwardx"}, false},
		{[]string{"Functional.linear.5.forward.input", "Functional.linear.5.forward"}, true},
		{[]string{"Functional.linear.5.forward.input", "Functional.linear.6.forward"}, false},
		{[]string{"a.1.b.2", "a.1.b"}, true},
		{[]string{"a.1.b.2", "a.1"}, true},
		{[]string{"a.1.b.2", "a.2"}, false},
		{[]string{"a.05.b", "a.05"}, true},
		{[]string{"a.05.b", "a.5"}, false},
		{[]string{"a.1000000000.b", "a.1000000000"}, true},
		{[]string{"Module.layers.0.mlp.MLP.forward.0", "Module.layers.0.mlp.MLP.forward.1", "Module.layers.0"}, true},
		{[]string{"Module.layers.0.mlp.MLP.forward.0", "Module.layers.1"}, false},
		{[]string{"a.b", "a.b.c"}, true},
		{[]string{"a.b.c.d", "a"}, true},
		{[]string{"a.b", "a.bc", "a.b-c", "b.a.b"}, false},
		{[]string{"x.y", "x.y.", ".x"}, true},
		{[]string{"Tensor.add.0.forward", "Tensor.add.0.forward_x", "Tensor.add.0"}, true},
		{[]string{"Tensor.add.0.forward"}, false},
		{[]string{"X.0.forward", "X.0.forward", "A.0.forward", "A.0.forward.x"}, true},
	} {
		if got := NamesOf(tc.names).Extends(); got != tc.want {
			t.Errorf("Extends(%q) = %v, want %v", tc.names, got, tc.want)
		}
		if got := refExtends(tc.names); got != tc.want {
			t.Errorf("refExtends(%q) = %v, want %v", tc.names, got, tc.want)
		}
	}
	// A name extended, and one extending it, at every hundredth position
	// of 1000 names that each have a pattern of their own.
	ops := make([]string, 1000)
	for i := range ops {
		ops[i] = fmt.Sprintf("Tensor.op%d.%d.forward", i, i)
	}
	if NamesOf(ops).Extends() {
		t.Fatalf("Extends: 1000 names extending none: true")
	}
	for at := 0; at < len(ops); at += 100 {
		for by := 5; by < len(ops); by += 100 {
			names := slices.Clone(ops)
			names[by] = names[at] + ".x"
			if !NamesOf(names).Extends() {
				t.Errorf("Extends: name %d extending name %d of 1000: false", by, at)
			}
		}
	}
	many := benchNames(20_000)
	if NamesOf(many).Extends() {
		t.Error("Extends of realistic names: true")
	}
	if !NamesOf(append(many, "Module.layers.3.mlp")).Extends() {
		t.Error("Extends of realistic names and a module path: false")
	}
}

// checkFind fails unless Find and Distinct answer as a map of names to
// their last position does, for the names and for near misses.
func checkFind(t *testing.T, n *Names, names []string) {
	t.Helper()
	last := map[string]int{}
	for i, name := range names {
		last[name] = i
	}
	if n.Distinct() != len(last) {
		t.Fatalf("Distinct = %d, want %d", n.Distinct(), len(last))
	}
	for i, name := range names {
		for _, q := range append(nearMisses(name), name, name+"x") {
			want, wok := last[q]
			if got, ok := n.Find(q); ok != wok || got != want {
				t.Fatalf("Find(%q) = %d, %v; want %d, %v", q, got, ok, want, wok)
			}
			// not within the window: Find's answer
			if got, ok := n.FindFrom(q, i+1, 0); ok != wok || got != want {
				t.Fatalf("FindFrom(%q, %d, 0) = %d, %v; want %d, %v", q, i+1, got, ok, want, wok)
			}
		}
		// within it: the first there
		lo := max(0, i-3)
		first := lo + slices.Index(names[lo:i+1], name)
		if got, ok := n.FindFrom(name, i-3, 8); !ok || got != first {
			t.Fatalf("FindFrom(%q, %d, 8) = %d, %v; want %d", name, i-3, got, ok, first)
		}
	}
}

// TestNamesFind: the last of repeated names, none for names not there,
// on lists long enough that names share table slots.
func TestNamesFind(t *testing.T) {
	t.Parallel()
	var many []string
	for i := range 3000 {
		many = append(many, fmt.Sprintf("Functional.linear.%d.forward", i%1000), fmt.Sprintf("Module.m%d.M.forward.%d", i%7, i))
	}
	for _, names := range [][]string{
		nil,
		{""},
		{"a", "a", "a"},
		{"Tensor.add.0.forward", "Tensor.add.1.forward", "Tensor.add.0.forward"},
		many,
	} {
		n := NamesOf(names)
		n.Unindex() // before any index: nothing to free
		checkFind(t, n, names)
		n.Unindex() // Find indexes the names again; Distinct kept its count
		if len(names) > 0 && (n.Distinct() != len(slices.Compact(slices.Sorted(slices.Values(names)))) || n.slots != nil) {
			t.Errorf("Distinct after Unindex = %d, indexed %v", n.Distinct(), n.slots != nil)
		}
		checkFind(t, n, names)
	}
	var n *Names
	n.Unindex()
	if _, ok := n.Find("a"); ok || n.Distinct() != 0 {
		t.Error("a nil Names finds a name")
	}
}

// benchNames is n realistic dump entry names: module calls, functional
// and tensor calls by call count, and parameter gradients.
func benchNames(n int) []string {
	apis := []string{"Functional.linear", "Functional.conv2d", "Tensor.__add__", "Tensor.view", "Torch.matmul", "Functional.gelu"}
	out := make([]string, 0, n)
	for i := 0; len(out) < n; i++ {
		layer, k := (i/8)%48, i/(8*48)
		switch i % 8 {
		case 0, 1:
			out = append(out, fmt.Sprintf("Module.layers.%d.mlp.MLP.forward.%d", layer, k%40))
		case 2:
			out = append(out, fmt.Sprintf("Module.layers.%d.self_attn.Attention.backward.%d", layer, k%40))
		case 3:
			out = append(out, fmt.Sprintf("Module.layers.%d.mlp.parameters_grad", layer))
		default:
			dir := "forward"
			if i%16 >= 12 {
				dir = "backward"
			}
			out = append(out, fmt.Sprintf("%s.%d.%s", apis[i%len(apis)], i/len(apis), dir))
		}
	}
	return out
}

func BenchmarkNamesAt(b *testing.B) {
	names := benchNames(100_000)
	n := NamesOf(names)
	n.Done()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		sinkName = n.At(i)
		if i++; i == len(names) {
			i = 0
		}
	}
}

func BenchmarkNamesAdd(b *testing.B) {
	strs := benchNames(100_000)
	names := make([][]byte, len(strs))
	for i, s := range strs {
		names[i] = []byte(s)
	}
	b.ReportAllocs()
	var n *Names
	for b.Loop() {
		n = &Names{}
		for _, name := range names {
			n.Add(name)
		}
		n.Done()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(names)), "ns/name")
	b.ReportMetric(float64(n.Patterns()), "patterns")
}

// TestNamesDistinctBesideFind: once counted, Distinct answers beside a
// Find that indexes the names again after Unindex (run with -race).
func TestNamesDistinctBesideFind(t *testing.T) {
	t.Parallel()
	names := benchNames(5000)
	want := len(slices.Compact(slices.Sorted(slices.Values(names))))
	n := NamesOf(names)
	if got := n.Distinct(); got != want {
		t.Fatalf("Distinct = %d, want %d", got, want)
	}
	n.Unindex()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, ok := n.Find(names[len(names)/2]); !ok {
			t.Error("Find after Unindex found nothing")
		}
	}()
	for range 100 {
		if got := n.Distinct(); got != want {
			t.Fatalf("Distinct beside Find = %d, want %d", got, want)
		}
	}
	<-done
}
