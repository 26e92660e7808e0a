package msprobe

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/layermap/layermap/printparse/source"
)

// File names msprobe writes into a rank folder.
const (
	DumpJSONName      = "dump.json"
	DebugJSONName     = "debug.json"
	StackJSONName     = "stack.json"
	ConstructJSONName = "construct.json"
	TensorDirName     = "dump_tensor_data"
)

// rankDirRE is msprobe's rank folder pattern (check_and_return_dir_contents
// with prefix "rank"): "rank", "rank0", "rank12", never "rank01".
var rankDirRE = regexp.MustCompile(`^rank(0|[1-9][0-9]*)?$`)

// isProcDir reports whether name is "proc" followed by one or more digits
// (msprobe's find_proc_dir).
func isProcDir(name string) bool {
	if len(name) <= 4 || !strings.HasPrefix(name, "proc") {
		return false
	}
	for _, c := range name[4:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// RankDir is one rank (or proc) folder of a step folder.
type RankDir struct {
	Name string // folder name: "rank0", "rank", "proc2016"
	Path string // full path
	// Rank is the number after "rank" (-1 for a bare "rank"), or the pid
	// after "proc" for a proc folder.
	Rank int
	Proc bool // a proc{pid} folder (single-process run without rank)
}

// StepRanks lists the rank folders of a step folder the way msprobe's
// directory compare does: folders matching ^rank(0|[1-9][0-9]*)?$ sorted by
// their number (a bare "rank" counts as -1), other entries ignored. When
// there is no rank folder, the single proc{digits} folder is returned; no
// proc folder or several of them is an error. The error says what the
// folder holds.
func StepRanks(stepDir string) ([]RankDir, error) {
	ents, err := os.ReadDir(stepDir)
	if err != nil {
		return nil, source.PathError(stepDir, "a dump folder to read", err)
	}
	var ranks, procs []RankDir
	var others []string
	for _, e := range ents {
		if !isDirEntry(stepDir, e) {
			if name := e.Name(); e.Type()&fs.ModeSymlink != 0 && (rankDirRE.MatchString(name) || isProcDir(name)) {
				p := filepath.Join(stepDir, name)
				if _, err := Stat(p); err != nil {
					var se *source.Error
					if errors.As(err, &se) {
						se.Expected = "a rank folder"
						return nil, se
					}
					return nil, &source.Error{File: p, Expected: "a rank folder", Found: "a symbolic link to nothing"}
				}
			}
			others = append(others, e.Name())
			continue
		}
		name := e.Name()
		switch {
		case rankDirRE.MatchString(name):
			n := -1
			if len(name) > 4 {
				n, _ = strconv.Atoi(name[4:])
			}
			ranks = append(ranks, RankDir{Name: name, Path: filepath.Join(stepDir, name), Rank: n})
		case isProcDir(name):
			n, _ := strconv.Atoi(name[4:])
			procs = append(procs, RankDir{Name: name, Path: filepath.Join(stepDir, name), Rank: n, Proc: true})
		default:
			others = append(others, name)
		}
	}
	if len(ranks) > 0 {
		sort.SliceStable(ranks, func(i, j int) bool { return ranks[i].Rank < ranks[j].Rank })
		return ranks, nil
	}
	switch len(procs) {
	case 1:
		return procs, nil
	case 0:
		return nil, &source.Error{File: stepDir, Expected: "rank folders (rank0, rank1, ...) or one proc{pid} folder", Found: describeEntries(others)}
	default:
		return nil, &source.Error{File: stepDir, Expected: "rank folders or exactly one proc{pid} folder",
			Found: fmt.Sprintf("%d proc folders (%s)", len(procs), joinNames(procs))}
	}
}

// isDirEntry reports whether e is a directory, following symlinks.
func isDirEntry(parent string, e fs.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&fs.ModeSymlink != 0 {
		st, err := os.Stat(filepath.Join(parent, e.Name()))
		return err == nil && st.IsDir()
	}
	return false
}

func joinNames(ds []RankDir) string {
	names := make([]string, len(ds))
	for i, d := range ds {
		names[i] = d.Name
	}
	return strings.Join(names, ", ")
}

func describeEntries(names []string) string {
	if len(names) == 0 {
		return "an empty folder"
	}
	sort.Strings(names)
	const max = 8
	if len(names) > max {
		return fmt.Sprintf("%s, ... (%d entries)", strings.Join(names[:max], ", "), len(names))
	}
	return strings.Join(names, ", ")
}

// RankPair is one NPU rank folder paired with its bench rank folder.
type RankPair struct {
	NPU, Bench RankDir
}

// PairRanks pairs two StepRanks results the way msprobe's directory compare
// does: by sorted position, not by rank number; the counts must be equal.
func PairRanks(npu, bench []RankDir) ([]RankPair, error) {
	if len(npu) != len(bench) {
		return nil, fmt.Errorf("rank folder counts differ: target has %d (%s), golden has %d (%s)",
			len(npu), joinNames(npu), len(bench), joinNames(bench))
	}
	pairs := make([]RankPair, len(npu))
	for i := range npu {
		pairs[i] = RankPair{NPU: npu[i], Bench: bench[i]}
	}
	return pairs, nil
}

// FindRankDir resolves path to one rank folder: path itself when it holds
// a dump.json or debug.json (a rank or proc folder), the folder of path
// when path is a dump.json/debug.json file, or the only rank folder of a
// step folder (rank folders match ^rank(0|[1-9][0-9]*)?$; when there is
// none, exactly one proc{digits} folder). Anything else is an error that
// says what was found.
func FindRankDir(path string) (string, error) {
	st, err := Stat(path)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		base := filepath.Base(path)
		if base == DumpJSONName || base == DebugJSONName {
			return filepath.Dir(path), nil
		}
		return "", &source.Error{File: path, Expected: "a dump folder or a dump.json/debug.json file", Found: fmt.Sprintf("a file named %q", base)}
	}
	if err := checkDumpFile(path); err != nil {
		return "", err
	}
	if hasFile(path, DumpJSONName) || hasFile(path, DebugJSONName) {
		return path, nil
	}
	ranks, err := StepRanks(path)
	if err != nil {
		var se *source.Error
		if errors.As(err, &se) && se.File == path && strings.HasPrefix(se.Expected, "rank folders") {
			se.Expected = "a dump.json, " + se.Expected // not a rank folder either
		}
		return "", err
	}
	if len(ranks) != 1 {
		return "", &source.Error{File: path, Expected: "one rank folder",
			Found: fmt.Sprintf("%d (%s); pass one of them (compare also pairs whole step folders rank by rank)", len(ranks), joinNames(ranks))}
	}
	return ranks[0].Path, nil
}

// Stat is os.Stat for a dump path the user gave: what it cannot find (no
// such file, a link that loops) is a *source.Error naming the path and
// what it found, not "stat x: no such file or directory".
func Stat(path string) (fs.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, source.PathError(path, "a dump folder or file", err)
	}
	return st, nil
}

// checkDumpFile refuses a dump.json or debug.json in dir that is there
// but is no regular file (a folder, a FIFO, a looping link); a missing
// one is no error here.
func checkDumpFile(dir string) error {
	for _, name := range []string{DumpJSONName, DebugJSONName} {
		p := filepath.Join(dir, name)
		if _, err := os.Lstat(p); err != nil {
			continue
		}
		st, err := Stat(p)
		if err != nil {
			var se *source.Error
			if errors.As(err, &se) {
				return err
			}
			return &source.Error{File: p, Expected: "a regular file", Found: "a symbolic link to nothing"}
		}
		if kind := source.Kind(st.Mode()); kind != "" {
			return &source.Error{File: p, Expected: "a regular file", Found: kind}
		}
	}
	return nil
}

func hasFile(dir, name string) bool {
	st, err := os.Stat(filepath.Join(dir, name))
	return err == nil && !st.IsDir()
}

// Paths are the files of one rank folder.
type Paths struct {
	Dir           string // the rank folder
	DumpJSON      string // dump.json, or debug.json when there is no dump.json
	StackJSON     string // stack.json, "" when absent
	ConstructJSON string // construct.json, "" when absent
	// TensorDir is Dir/dump_tensor_data, where tensor mode keeps the files
	// named by data_name (msprobe derives it from the dump.json location and
	// ignores the header's dump_data_dir). It is set even when the folder
	// does not exist; TensorPath then fails when the file is opened.
	TensorDir string
	// Debug is true when DumpJSON is a debug.json (single-point save):
	// msprobe then uses entry names as-is and names the output
	// debug_compare_result.
	Debug bool
}

// Locate finds the msprobe files of a rank folder. It fails when the
// folder has neither dump.json nor debug.json.
func Locate(dir string) (Paths, error) {
	st, err := Stat(dir)
	if err != nil {
		return Paths{}, err
	}
	if !st.IsDir() {
		return Paths{}, &source.Error{File: dir, Expected: "a rank folder", Found: "a file"}
	}
	if err := checkDumpFile(dir); err != nil {
		return Paths{}, err
	}
	p := Paths{Dir: dir, TensorDir: filepath.Join(dir, TensorDirName)}
	switch {
	case hasFile(dir, DumpJSONName):
		p.DumpJSON = filepath.Join(dir, DumpJSONName)
	case hasFile(dir, DebugJSONName):
		p.DumpJSON = filepath.Join(dir, DebugJSONName)
		p.Debug = true
	default:
		ents, _ := os.ReadDir(dir)
		names := make([]string, 0, len(ents))
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return Paths{}, &source.Error{File: dir, Expected: "dump.json or debug.json", Found: describeEntries(names)}
	}
	if hasFile(dir, StackJSONName) {
		p.StackJSON = filepath.Join(dir, StackJSONName)
	}
	if hasFile(dir, ConstructJSONName) {
		p.ConstructJSON = filepath.Join(dir, ConstructJSONName)
	}
	return p, nil
}

// ErrUnsafeDataName is wrapped by TensorPath's error for a data_name that
// would leave the tensor folder.
var ErrUnsafeDataName = errors.New("data_name escapes dump_tensor_data")

// CheckDataName refuses, at the item's line of p.DumpJSON (the file it
// was read from), a data_name TensorPath would refuse; names of no file
// ("" and "-1") pass. The error is a *source.Error wrapping
// ErrUnsafeDataName. It is checked for every tensor-mode row, matched or
// not, so that no table carries a name that leaves the dump.
func (p Paths) CheckDataName(it *Item) error {
	if !p.RefusesDataName(it) {
		return nil
	}
	if _, err := p.TensorPath(it.DataName); err != nil {
		file := p.DumpJSON
		if file == "" {
			file = filepath.Join(p.Dir, DumpJSONName)
		}
		why := strings.TrimPrefix(strings.TrimSuffix(err.Error(), ": "+ErrUnsafeDataName.Error()), fmt.Sprintf("data_name %q: ", it.DataName))
		return &source.Error{File: file, Line: itemLine(file, it), Expected: "a data_name naming a file inside dump_tensor_data (msprobe writes plain file names)",
			Found: fmt.Sprintf("%q (%s)", it.DataName, why), Err: ErrUnsafeDataName}
	}
	return nil
}

// RefusesDataName reports whether CheckDataName refuses it's data_name,
// without placing the refusal in the dump file (which may read it).
func (p Paths) RefusesDataName(it *Item) bool {
	if it.DataName == "" || it.DataName == "-1" {
		return false
	}
	_, err := p.TensorPath(it.DataName)
	return errors.Is(err, ErrUnsafeDataName)
}

// itemLine is the line where it starts in the dump file at path, it
// read from there: Line, or for an item whose Line counts from its
// entry's name (Item.entryAt), that line counted in the file, read up to
// the entry (for messages, not for every row); 0 when the file cannot be
// read again: a refusal names no line rather than a wrong one.
func itemLine(path string, it *Item) int {
	if it.entryAt == 0 {
		return it.Line
	}
	f, err := source.Open(path, source.MaxDumpJSON)
	if err != nil {
		return 0
	}
	defer f.Close()
	line, err := lineFrom(f, it.entryAt, it.Line)
	if err != nil {
		return 0
	}
	return line
}

// TensorPath is the file a tensor-mode item's data_name names in
// p.TensorDir. It refuses, with an error wrapping ErrUnsafeDataName, any
// data_name that is empty, "-1" (no file), absolute, contains a path
// separator ('/' or '\\'), a NUL byte, or is "." or "..": msprobe writes
// plain file names there, so anything else would read outside the dump.
// It does not check that the file exists.
func (p Paths) TensorPath(dataName string) (string, error) {
	switch {
	case dataName == "" || dataName == "-1":
		return "", fmt.Errorf("data_name %q: item has no tensor file: %w", dataName, ErrUnsafeDataName)
	case dataName == "." || dataName == "..":
		return "", fmt.Errorf("data_name %q: not a file name: %w", dataName, ErrUnsafeDataName)
	case strings.ContainsAny(dataName, "/\\\x00"):
		return "", fmt.Errorf("data_name %q: contains a path separator: %w", dataName, ErrUnsafeDataName)
	case filepath.IsAbs(dataName) || filepath.VolumeName(dataName) != "":
		return "", fmt.Errorf("data_name %q: absolute path: %w", dataName, ErrUnsafeDataName)
	}
	if p.TensorDir == "" {
		return "", fmt.Errorf("data_name %q: no tensor folder for %s", dataName, p.Dir)
	}
	return filepath.Join(p.TensorDir, dataName), nil
}
