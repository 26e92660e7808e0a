package cmd

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/layermap/layermap/cmd/iostreams"
	"github.com/layermap/layermap/mapping"
	"github.com/layermap/layermap/mapping/validate"
	"github.com/layermap/layermap/printparse"
	"github.com/layermap/layermap/printparse/source"
)

// ValidateOptions are the flags and argument of layermap validate.
type ValidateOptions struct {
	IO                   *iostreams.IOStreams
	Mapping              string // layer_mapping.yaml, or "-"
	NPU, Bench           string
	MinCoverage          float64
	Strict               bool
	Format               string // text, json or github
	IndexNPU, IndexBench int
}

const validateLong = `validate checks MAPPING (msprobe's layer_mapping.yaml) against the NPU and
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
  missing-rule     an NPU module without partner whose parent's partner has
                   unclaimed children of its kind (LM110)
  band             drafted lines whose comment starts with CHECK (LM111, info) or
                   UNSURE (LM112, warning: --strict fails until the word is edited
                   after review); suggest starts every line's comment with its band

NPU and BENCH are print(model) files or msprobe dump folders. "-" reads
MAPPING or one side from standard input (layermap suggest NPU BENCH |
layermap validate - --npu NPU --bench BENCH). The NPU side is the one whose class names key
the YAML (msprobe's -tp side).

Exit status: 0 clean, 1 findings at or above the failing severity (errors;
warnings too with --strict; coverage below --min-coverage), 2 unusable input.`

// validateHelp is validateLong with the table of every code.
func validateHelp() string {
	var b strings.Builder
	b.WriteString(validateLong)
	b.WriteString("\n\nCodes:\n")
	for _, c := range append(append([]mapping.CodeInfo{}, mapping.LoadCodes...), validate.Codes...) {
		fmt.Fprintf(&b, "  %s  %-13s %s\n", c.Code, c.Severity, c.Meaning)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// NewCmdValidate builds layermap validate; runF, when set, replaces
// runValidate.
func NewCmdValidate(ios *iostreams.IOStreams, runF func(*ValidateOptions) error) *cobra.Command {
	opts := &ValidateOptions{IO: ios}
	var minCoverage string
	c := &cobra.Command{
		Use:   "validate MAPPING --npu NPU --bench BENCH",
		Short: "Check a layer_mapping.yaml against both structures before msprobe applies it silently",
		Long:  validateHelp(),
		Example: `  # the drafts of 'layermap suggest --help' (paths from a layermap checkout)
  layermap validate layer_mapping.yaml --npu testdata/demo/qwen25vl-mindspeed-mm.txt --bench testdata/demo/qwen25vl-llamafactory.txt
  layermap validate lf_to_ms.yaml --npu testdata/demo/dumps/llamafactory --bench testdata/demo/dumps/mindspeed-mm --min-coverage 0.7
  layermap validate layer_mapping.yaml --npu testdata/demo/qwen25vl-mindspeed-mm.txt --bench testdata/demo/qwen25vl-llamafactory.txt \
      --format github --strict`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return flagErrorf("validate: expected one MAPPING (a layer_mapping.yaml) and the structures as --npu and --bench, found %d arguments\nRun 'layermap validate --help' for usage", len(args))
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			opts.Mapping = args[0]
			if opts.NPU == "" || opts.Bench == "" {
				return flagErrorf("validate needs both --npu and --bench")
			}
			if n := btoi(opts.Mapping == "-") + btoi(opts.NPU == "-") + btoi(opts.Bench == "-"); n > 1 {
				return flagErrorf("validate: expected at most one of MAPPING, --npu and --bench as \"-\" (standard input), found %d", n)
			}
			if opts.Format != "text" && opts.Format != "json" && opts.Format != "github" {
				return flagErrorf("--format must be text, json or github, got %q", opts.Format)
			}
			if err := checkIndexes(opts.IndexNPU, opts.IndexBench); err != nil {
				return err
			}
			var err error
			if opts.MinCoverage, err = parseCoverage(minCoverage); err != nil {
				return &FlagError{err}
			}
			if runF != nil {
				return runF(opts)
			}
			return runValidate(opts)
		},
	}
	f := c.Flags()
	f.StringVar(&opts.NPU, "npu", "", "NPU side: print(model) file or msprobe dump folder (the side whose classes key the YAML)")
	f.StringVar(&opts.Bench, "bench", "", "bench side: print(model) file or msprobe dump folder")
	f.StringVar(&minCoverage, "min-coverage", "", "fail when coverage is below this share (0.9 or 90%)")
	f.BoolVar(&opts.Strict, "strict", false, "warnings fail too")
	f.StringVar(&opts.Format, "format", "text", "output: text, json or github (workflow annotations)")
	f.IntVar(&opts.IndexNPU, "index-npu", -1, "0-based dump to read when the NPU file holds several")
	f.IntVar(&opts.IndexBench, "index-bench", -1, "0-based dump to read when the bench file holds several")
	return c
}

func runValidate(opts *ValidateOptions) error {
	m, diags, err := loadMapping(opts.IO, opts.Mapping)
	if err != nil {
		return err
	}
	npu, err := loadTree(opts.IO, opts.NPU, printparse.Options{Index: opts.IndexNPU, IndexFlag: "--index-npu"}, "--npu")
	if err != nil {
		return err
	}
	bench, err := loadTree(opts.IO, opts.Bench, printparse.Options{Index: opts.IndexBench, IndexFlag: "--index-bench"}, "--bench")
	if err != nil {
		return err
	}
	rep := validate.Check(m, diags, npu, bench, validate.Options{MinCoverage: opts.MinCoverage})
	if npu.Kind == printparse.KindMsprobe && bench.Kind == printparse.KindMsprobe {
		ec, err := validate.EntryCoverage(m, opts.NPU, opts.Bench)
		if err != nil {
			return err
		}
		rep.Entries = &ec
	}
	switch opts.Format {
	case "json":
		err = rep.WriteJSON(opts.IO.Out)
	case "github":
		err = rep.WriteGitHub(opts.IO.Out)
	default:
		err = rep.WriteText(opts.IO.Out)
	}
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if rep.Failed(opts.Strict) {
		return ErrFindings
	}
	return nil
}

// loadMapping reads a layer_mapping.yaml, or standard input for "-"
// (layermap suggest NPU BENCH | layermap validate - --npu NPU --bench BENCH).
func loadMapping(ios *iostreams.IOStreams, path string) (*mapping.Mapping, []mapping.Diagnostic, error) {
	if path != "-" {
		return mapping.Load(path)
	}
	data, err := source.ReadAll(ios.In, "<stdin>", source.MaxMappingYAML)
	if err != nil {
		return nil, nil, err
	}
	return mapping.Parse(data, "<stdin>")
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
