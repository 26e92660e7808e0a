package cmd

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/layermap/layermap/printparse/testkit"
)

const module = "github.com/layermap/layermap"

// TestReadmeLayout checks README's layout table against the code: every
// package is listed, each row's imports column is the package's layermap
// imports (test files aside), and every import is listed above the
// package that makes it (the table is the import graph bottom-up).
func TestReadmeLayout(t *testing.T) {
	root := testkit.Root(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := layoutRows(t, string(readme))
	pkgs := packageImports(t, root)

	listed := map[string]int{} // package -> row
	for i, r := range rows {
		listed[r.pkg] = i
	}
	for pkg := range pkgs {
		if _, ok := listed[pkg]; !ok {
			t.Errorf("package %s is not in README's layout table", pkg)
		}
	}
	for i, r := range rows {
		got, ok := pkgs[r.pkg]
		if !ok {
			if len(r.imports) > 0 {
				t.Errorf("README lists imports for %s, which holds no Go package", r.path)
			}
			continue
		}
		if !slices.Equal(r.imports, got) {
			t.Errorf("README: %s imports %v; the code imports %v", r.path, r.imports, got)
		}
		for _, imp := range got {
			if j, ok := listed[imp]; ok && j > i {
				t.Errorf("README lists %s (row %d) below %s (row %d), which imports it", imp, j+1, r.path, i+1)
			}
		}
	}
}

// TestReadmeBuild runs the build of README's install command, which
// names the build's profile (-pgo): the profile must be there and build
// the binary.
func TestReadmeBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("a build with a new profile compiles every package anew")
	}
	t.Parallel()
	root := testkit.Root(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var build []string
	for line := range strings.SplitSeq(string(readme), "\n") {
		if cmd, ok := strings.CutPrefix(line, "go build "); ok {
			cmd, _, _ = strings.Cut(cmd, " && ")
			build = strings.Fields(cmd)
			break
		}
	}
	if !slices.ContainsFunc(build, func(f string) bool { return strings.HasPrefix(f, "-pgo=") }) {
		t.Fatalf("README's install command builds with %q: expected a -pgo= profile", build)
	}
	bin := filepath.Join(t.TempDir(), "layermap")
	if i := slices.Index(build, "-o"); i >= 0 && i+1 < len(build) {
		build[i+1] = bin
	} else {
		t.Fatalf("README's install command builds with %q: expected -o layermap", build)
	}
	cmd := exec.Command("go", append([]string{"build"}, build...)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", strings.Join(build, " "), err, out)
	}
	if out, err := exec.Command(bin, "--version").Output(); err != nil || !strings.HasPrefix(string(out), "layermap ") {
		t.Errorf("%s --version: %v %q", bin, err, out)
	}
}

type layoutRow struct {
	path    string   // as written: "mapping/compare/", "main.go"
	pkg     string   // the package's folder: "mapping/compare", "."
	imports []string // sorted
}

// layoutRows reads the table of README's "## Layout" section.
func layoutRows(t *testing.T, readme string) []layoutRow {
	t.Helper()
	_, sec, ok := strings.Cut(readme, "\n## Layout\n")
	if !ok {
		t.Fatal("README has no ## Layout section")
	}
	if next := strings.Index(sec, "\n## "); next >= 0 {
		sec = sec[:next]
	}
	var rows []layoutRow
	for line := range strings.SplitSeq(sec, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue // not a row, or the header
		}
		path := strings.Trim(strings.TrimSpace(cells[1]), "`")
		pkg := strings.TrimSuffix(path, "/")
		if path == "main.go" {
			pkg = "."
		}
		var imports []string
		for imp := range strings.SplitSeq(cells[2], ",") {
			if imp = strings.Trim(strings.TrimSpace(imp), "`"); imp != "" && imp != "—" {
				imports = append(imports, imp)
			}
		}
		slices.Sort(imports)
		rows = append(rows, layoutRow{path, pkg, imports})
	}
	if len(rows) == 0 {
		t.Fatal("README's layout section has no table rows")
	}
	return rows
}

// packageImports maps each package folder of the module ("." for the
// root) to its sorted layermap imports, test files aside, as go list's
// .Imports gives them (every build tag's files together).
func packageImports(t *testing.T, root string) map[string][]string {
	t.Helper()
	pkgs := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		imports := pkgs[rel]
		for _, is := range f.Imports {
			path, _ := strconv.Unquote(is.Path.Value)
			if imp, ok := strings.CutPrefix(path, module+"/"); ok && !slices.Contains(imports, imp) {
				imports = append(imports, imp)
			}
		}
		pkgs[rel] = imports
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, imports := range pkgs {
		slices.Sort(imports)
	}
	if len(pkgs) < 10 {
		t.Fatalf("found %d packages under %s: not the module", len(pkgs), root)
	}
	return pkgs
}
