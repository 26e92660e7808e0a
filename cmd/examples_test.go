package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layermap/layermap/cmd/iostreams"
	"github.com/layermap/layermap/printparse/testkit"
)

// TestHelpExamples runs every example of every command's --help, in the
// order a user would (suggest writes the drafts validate and compare
// read), from a folder laid out like a layermap checkout: each must run
// (exit 0, or 1 for findings), never fail on its input.
func TestHelpExamples(t *testing.T) {
	root := testkit.Root(t)
	dir := t.TempDir()
	for _, d := range []string{"testdata", "cmd"} {
		if err := os.Symlink(filepath.Join(root, d), filepath.Join(dir, d)); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	cmds := map[string]string{}
	ios, _, _, _ := iostreams.Test()
	for _, c := range NewCmdRoot(ios).Commands() {
		cmds[c.Name()] = c.Example
	}
	for _, name := range []string{"suggest", "validate", "compare", "tree", "templates"} {
		lines := exampleLines(cmds[name])
		if len(lines) == 0 {
			t.Errorf("%s --help has no example", name)
		}
		for _, line := range lines {
			t.Run(name+"/"+line, func(t *testing.T) {
				args := strings.Fields(line)
				var stdin []byte
				if args[0] == "cat" && len(args) > 3 && args[2] == "|" {
					var err error
					if stdin, err = os.ReadFile(args[1]); err != nil {
						t.Fatal(err)
					}
					args = args[3:]
				}
				redirect := ""
				if n := len(args); n > 2 && args[n-2] == ">" {
					redirect, args = args[n-1], args[:n-2]
				}
				if args[0] != "layermap" {
					t.Fatalf("example %q does not run layermap", line)
				}
				var out, errb bytes.Buffer
				code := Execute(args[1:], bytes.NewReader(stdin), &out, &errb)
				if code != ExitOK && code != ExitFindings {
					t.Fatalf("exit %d\nstderr: %s", code, errb.String())
				}
				if out.Len() == 0 && redirect == "" && !strings.Contains(line, " -o ") {
					t.Errorf("no output")
				}
				if redirect != "" {
					if err := os.WriteFile(redirect, out.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}

// exampleLines lists the commands of a cobra Example text, continuation
// lines ("\") joined, comments and blank lines left out.
func exampleLines(ex string) []string {
	var out []string
	cur := ""
	for _, l := range strings.Split(ex, "\n") {
		l = strings.TrimSpace(l)
		if cur == "" && (l == "" || strings.HasPrefix(l, "#")) {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\")
			continue
		}
		out = append(out, strings.Join(strings.Fields(cur+l), " "))
		cur = ""
	}
	return out
}
