package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layermap/layermap/templates"
)

func TestTemplatesCmd(t *testing.T) {
	expert, err := templates.Get("qwen2.5-vl_mindspeed-mm_to_llamafactory-expert")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		code       int
		out        string // exact stdout, or "@golden" for the list golden file
		errContain string
	}{
		{"list", []string{"templates"}, ExitOK, "@golden", ""},
		{"show", []string{"templates", "--show", expert.Name}, ExitOK, string(expert.Text), ""},
		{"show with .yaml", []string{"templates", "--show", expert.Name + ".yaml"}, ExitOK, string(expert.Text), ""},
		{"show unknown", []string{"templates", "--show", "qwen3"}, ExitBadInput, "", `no template "qwen3" (known: qwen2.5-vl_llamafactory_to_mindspeed-mm,`},
		{"show empty", []string{"templates", "--show", ""}, ExitBadInput, "", `no template ""`},
		// was cobra's `unknown command "x" for "layermap templates"`
		{"name as argument", []string{"templates", expert.Name}, ExitBadInput, "",
			`layermap: templates: expected no argument, found "` + expert.Name + `"; print a template with 'layermap templates --show ` + expert.Name + "'\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Execute(tc.args, strings.NewReader(""), &out, &errb)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, errb.String())
			}
			want := tc.out
			if want == "@golden" {
				path := filepath.Join("testdata", "templates_list.golden")
				if *update {
					if err := os.MkdirAll("testdata", 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test ./cmd -run TestTemplatesCmd -update-templates)", err)
				}
				want = string(b)
			}
			if out.String() != want {
				t.Errorf("stdout:\n%s\nwant:\n%s", out.String(), want)
			}
			if !strings.Contains(errb.String(), tc.errContain) {
				t.Errorf("stderr %q does not contain %q", errb.String(), tc.errContain)
			}
		})
	}
}
