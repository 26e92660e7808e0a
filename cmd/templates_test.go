package cmd

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
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
		{"show unknown", []string{"templates", "--show", "qwen3"}, ExitBadInput, "", `no template "qwen3" (known: deepseek-v3_megatron-core_to_transformers,`},
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
			if tc.out == "@golden" {
				testkit.Golden(t, filepath.Join("testdata", "templates_list.golden"), out.Bytes())
			} else if out.String() != tc.out {
				t.Errorf("stdout:\n%s\nwant:\n%s", out.String(), tc.out)
			}
			if !strings.Contains(errb.String(), tc.errContain) {
				t.Errorf("stderr %q does not contain %q", errb.String(), tc.errContain)
			}
		})
	}
}
