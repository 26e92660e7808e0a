package cmd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/mapping/validate"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/source"
)

func newValidateCmd(s *streams) *cobra.Command {
	var (
		npuPath, benchPath   string
		minCoverage          string
		strict               bool
		format               string
		indexNPU, indexBench int
	)
	c := &cobra.Command{
		Use:   "validate MAPPING --npu NPU --bench BENCH",
		Short: "Check a layer_mapping.yaml against both structures before msprobe applies it silently",
		Long: `validate checks MAPPING (msprobe's layer_mapping.yaml) against the NPU and
bench structures with msprobe's own resolution rules, and reports what msprobe
would accept without a word:

  load             duplicate class or child keys (PyYAML keeps the last), empty
                   or cut values, the legacy Cell key, non-string keys (LM0xx)
  dead-rule        a class key that occurs nowhere on the NPU side, a child path
                   that exists under no instance of its class (LM101, LM102)
  bad-target       a rewritten path that does not exist on the bench side (LM103)
  shadowed-rule    a rule that never fires because an ancestor's longer key
                   always wins (LM104)
  conflict         a class whose instances need different child maps (LM105,
                   LM108 when longer keys already resolve it, LM109)
  suspicious-pair  resolved partners whose kinds or printed sizes disagree (LM107)
  coverage         share of NPU modules whose rewritten name exists on the
                   bench side, and the unmatched modules of both sides (LM106)

NPU and BENCH are print(model) files or msprobe dump folders. "-" reads
MAPPING or one side from standard input (layermap suggest NPU BENCH |
layermap validate - --npu NPU --bench BENCH). The NPU side is the one whose class names key
the YAML (msprobe's -tp side).

Exit status: 0 clean, 1 findings at or above the failing severity (errors;
warnings too with --strict; coverage below --min-coverage), 2 unusable input.`,
		Example: `  # the drafts of 'layermap suggest --help' (paths from a layermap checkout)
  layermap validate layer_mapping.yaml --npu testdata/demo/qwen25vl-mindspeed-mm.txt --bench testdata/demo/qwen25vl-llamafactory.txt
  layermap validate lf_to_ms.yaml --npu testdata/demo/dumps/llamafactory --bench testdata/demo/dumps/mindspeed-mm --min-coverage 0.7
  layermap validate layer_mapping.yaml --npu testdata/demo/qwen25vl-mindspeed-mm.txt --bench testdata/demo/qwen25vl-llamafactory.txt \
      --format github --strict`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return badInput(fmt.Errorf("validate: expected one MAPPING (a layer_mapping.yaml) and the structures as --npu and --bench, found %d arguments\nRun 'layermap validate --help' for usage", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if npuPath == "" || benchPath == "" {
				return badInput(fmt.Errorf("validate needs both --npu and --bench"))
			}
			if n := btoi(args[0] == "-") + btoi(npuPath == "-") + btoi(benchPath == "-"); n > 1 {
				return badInput(fmt.Errorf("validate: expected at most one of MAPPING, --npu and --bench as \"-\" (standard input), found %d", n))
			}
			if format != "text" && format != "json" && format != "github" {
				return badInput(fmt.Errorf("--format must be text, json or github, got %q", format))
			}
			minCov, err := parseCoverage(minCoverage)
			if err != nil {
				return badInput(err)
			}
			var m *mapping.Mapping
			var diags []mapping.Diagnostic
			if args[0] == "-" {
				// layermap suggest NPU BENCH | layermap validate - --npu NPU --bench BENCH
				var data []byte
				if data, err = source.ReadAll(s.in, "<stdin>", source.MaxMappingYAML); err == nil {
					m, diags, err = mapping.Parse(data, "<stdin>")
				}
			} else {
				m, diags, err = mapping.Load(args[0])
			}
			if err != nil {
				return badInput(err)
			}
			npu, err := loadSide(s, "--npu", npuPath, indexNPU)
			if err != nil {
				return badInput(err)
			}
			bench, err := loadSide(s, "--bench", benchPath, indexBench)
			if err != nil {
				return badInput(err)
			}
			rep := validate.Check(m, diags, npu, bench, validate.Options{MinCoverage: minCov})
			if npu.Kind == printparse.KindMsprobe && bench.Kind == printparse.KindMsprobe {
				ec, err := validate.EntryCoverage(m, npuPath, benchPath)
				if err != nil {
					return badInput(err)
				}
				rep.Entries = &ec
			}
			switch format {
			case "json":
				err = rep.WriteJSON(s.out)
			case "github":
				err = rep.WriteGitHub(s.out)
			default:
				err = rep.WriteText(s.out)
			}
			if err != nil {
				return fmt.Errorf("write report: %w", err)
			}
			if rep.Failed(strict) {
				return findings()
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&npuPath, "npu", "", "NPU side: print(model) file or msprobe dump folder (the side whose classes key the YAML)")
	f.StringVar(&benchPath, "bench", "", "bench side: print(model) file or msprobe dump folder")
	f.StringVar(&minCoverage, "min-coverage", "", "fail when coverage is below this share (0.9 or 90%)")
	f.BoolVar(&strict, "strict", false, "warnings fail too")
	f.StringVar(&format, "format", "text", "output: text, json or github (workflow annotations)")
	f.IntVar(&indexNPU, "index-npu", -1, "0-based dump to read when the NPU file holds several")
	f.IntVar(&indexBench, "index-bench", -1, "0-based dump to read when the bench file holds several")
	return c
}

// loadSide reads one side and reports the parser's repairs on stderr.
func loadSide(s *streams, flag, path string, index int) (*printparse.Tree, error) {
	if index < -1 {
		return nil, fmt.Errorf("--index-%s must be a 0-based dump number, got %d", strings.TrimPrefix(flag, "--"), index)
	}
	t, err := printparse.Load(path, printparse.Options{Index: index, IndexFlag: "--index-" + strings.TrimPrefix(flag, "--"), Stdin: s.in})
	if err != nil {
		var pe *source.Error
		var de *source.Error
		if errors.As(err, &pe) || errors.As(err, &de) {
			return nil, err // "file:line: expected ..., found ...": the file says which side
		}
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	t.WriteWarnings(s.err)
	return t, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// parseCoverage reads "0.9" or "90%"; "" is 0 (off).
func parseCoverage(s string) (float64, error) {
	if s == "" {
		return 0, nil
	}
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err == nil && pct {
		v /= 100
	}
	if err != nil || v < 0 || v > 1 {
		return 0, fmt.Errorf("--min-coverage: expected a share between 0 and 1 or a percentage, found %q", s)
	}
	return v, nil
}
