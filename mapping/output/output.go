// Package output writes the files of one run as a set, all or nothing.
//
// Every file of a Set is written to a temporary file in its target folder
// and renamed into place by Commit only when all of them were written; a
// failure (or Abort) removes the temporaries and leaves nothing behind,
// and a failure during Commit undoes the renames already done. While a Set
// holds temporaries, SIGINT and SIGTERM remove them and end the process
// with the conventional status (130, 143).
//
// Stamped names (msprobe's compare_result_<YYYYmmddHHMMSS>.csv) never
// replace a file: when a name of the set is taken, by an earlier run or by
// another run in the same second, the whole set moves to the next free
// second, so the files of one run keep one stamp and no run's table is
// lost. Fixed names (an -o the user gave) replace the file there, which is
// restored should the set fail.
package output

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/layermap/layermap/printparse/source"
)

// StampLayout is the time stamp in stamped names, as msprobe writes it.
const StampLayout = "20060102150405"

// maxStampTries bounds how many later seconds Commit tries when a stamped
// name is taken.
const maxStampTries = 1000

// Name is the final name of a file in its folder: Prefix + Suffix, or
// Prefix + stamp + Suffix when Stamped.
type Name struct {
	Prefix, Suffix string
	Stamped        bool
}

func (n Name) with(stamp string) string {
	if !n.Stamped {
		return n.Prefix + n.Suffix
	}
	return n.Prefix + stamp + n.Suffix
}

// Set is the files of one run.
type Set struct {
	mu    sync.Mutex
	files []*File
	done  bool // committed or aborted
	err   error
}

// File is one file of a Set, written to a temporary file until Commit.
type File struct {
	set     *Set
	f       *os.File
	tmp     string
	dir     string
	name    Name
	mode    fs.FileMode
	path    string // final path, after Commit
	next    string // the temporary Rewrite is writing, removed by an abort
	moved   bool   // tmp was renamed to path (no hard links)
	dropped bool
}

// NewSet returns an empty set.
func NewSet() *Set { return &Set{} }

// Create adds a file that Commit writes to dir under name with the given
// permissions. dir must exist: a missing folder is an error naming it
// (output folders are never created here).
func (s *Set) Create(dir string, name Name, mode fs.FileMode) (*File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return nil, errors.New("output set already committed or aborted")
	}
	if dir == "" {
		dir = "."
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		found := "nothing there"
		switch {
		case err == nil && st.Mode().IsRegular():
			found = "a file"
		case err == nil:
			found = source.Kind(st.Mode())
		case errors.Is(err, syscall.ENOTDIR):
			found = "a file where a folder of its path should be"
		case !errors.Is(err, fs.ErrNotExist):
			found = source.FoundFS(err)
		}
		return nil, &source.Error{File: dir, Expected: "an existing folder for " + name.with("<time>"), Found: found}
	}
	if len(s.files) == 0 {
		register(s) // before the first temporary exists
	}
	f, err := os.CreateTemp(dir, ".layermap-*"+filepath.Ext(name.Suffix)+".tmp")
	if err != nil {
		if len(s.files) == 0 {
			unregister(s)
		}
		return nil, &source.Error{File: dir, Expected: "a folder " + name.with("<time>") + " can be written in", Found: "one that refuses new files (" + bare(err).Error() + ")"}
	}
	s.files = append(s.files, &File{set: s, f: f, tmp: f.Name(), dir: dir, name: name, mode: mode})
	file := s.files[len(s.files)-1]
	return file, nil
}

// WriteFile adds a file holding data (see Create).
func (s *Set) WriteFile(dir string, name Name, data []byte, mode fs.FileMode) (*File, error) {
	f, err := s.Create(dir, name, mode)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(data); err != nil {
		return nil, err
	}
	return f, nil
}

// Write appends to the file's temporary.
func (f *File) Write(p []byte) (int, error) {
	n, err := f.f.Write(p)
	if err != nil {
		err = fmt.Errorf("write %s: %w", f.display(), bare(err))
	}
	return n, err
}

// ReadAt reads the file's temporary at offset off, as os.File.ReadAt does.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.f.ReadAt(p, off)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("read %s: %w", f.display(), bare(err))
	}
	return n, err
}

// WriteAt writes p at offset off of the file's temporary, over what was
// written there (a header completed once what follows it is known).
func (f *File) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.f.WriteAt(p, off)
	if err != nil {
		err = fmt.Errorf("write %s: %w", f.display(), bare(err))
	}
	return n, err
}

// Truncate discards what was written so far.
func (f *File) Truncate() error {
	if err := f.f.Truncate(0); err != nil {
		return fmt.Errorf("write %s: %w", f.display(), bare(err))
	}
	_, err := f.f.Seek(0, 0)
	return err
}

// Rewrite replaces what was written to the file with what edit writes to
// w, reading it from r. The new content goes to a temporary of its own,
// which takes the old one's place when edit succeeds; on an error the
// file is left as it was, open for more writes.
func (f *File) Rewrite(edit func(w io.Writer, r io.Reader) error) error {
	f.set.mu.Lock()
	if f.set.done || f.dropped {
		f.set.mu.Unlock()
		return fmt.Errorf("write %s: file no longer in the set", f.display())
	}
	nf, err := os.CreateTemp(f.dir, ".layermap-*"+filepath.Ext(f.name.Suffix)+".tmp")
	if err == nil {
		f.next = nf.Name()
	}
	f.set.mu.Unlock()
	if err != nil {
		return fmt.Errorf("write %s: %w", f.display(), bare(err))
	}
	w := NewWriter(tempWriter{nf, f}, 1<<20)
	err = edit(w, io.NewSectionReader(f.f, 0, math.MaxInt64))
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	f.set.mu.Lock()
	defer f.set.mu.Unlock()
	f.next = ""
	if err != nil || f.set.done {
		nf.Close()
		os.Remove(nf.Name())
		if err == nil {
			err = fmt.Errorf("write %s: output set aborted", f.display())
		}
		return err
	}
	f.f.Close()
	os.Remove(f.tmp)
	f.f, f.tmp = nf, nf.Name()
	return nil
}

// tempWriter writes a Rewrite's temporary, its errors naming the file as
// File.Write's do.
type tempWriter struct {
	tmp *os.File
	f   *File
}

func (t tempWriter) Write(p []byte) (int, error) {
	n, err := t.tmp.Write(p)
	if err != nil {
		err = fmt.Errorf("write %s: %w", t.f.display(), bare(err))
	}
	return n, err
}

// Rename changes the name the file gets at Commit.
func (f *File) Rename(name Name) {
	f.set.mu.Lock()
	f.name = name
	f.set.mu.Unlock()
}

// Drop removes the file from the set: Commit will not write it.
func (f *File) Drop() {
	f.set.mu.Lock()
	defer f.set.mu.Unlock()
	if !f.dropped && f.path == "" {
		f.dropped = true
		f.f.Close()
		os.Remove(f.tmp)
	}
}

// Dir is the folder the file is written in ("." for the working one).
func (f *File) Dir() string { return f.dir }

// Path is the file's final path, known after Commit.
func (f *File) Path() string {
	f.set.mu.Lock()
	defer f.set.mu.Unlock()
	return f.path
}

// display names the file in errors: its final name, the stamp left open
// before Commit.
func (f *File) display() string {
	if f.path != "" {
		return f.path
	}
	return filepath.Join(f.dir, f.name.with("<time>"))
}

// Files lists the final paths of the committed files, in the order they
// were created.
func (s *Set) Files() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, f := range s.files {
		if f.path != "" {
			out = append(out, f.path)
		}
	}
	return out
}

// Abort removes every temporary; nothing of the set is written. It is a
// no-op after Commit.
func (s *Set) Abort() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.abortLocked()
}

func (s *Set) abortLocked() {
	if s.done {
		return
	}
	s.done = true
	for _, f := range s.files {
		f.f.Close()
		os.Remove(f.tmp)
		if f.next != "" {
			os.Remove(f.next)
		}
	}
	unregister(s)
}

// Commit renames every file of the set into place, stamped names carrying
// stamp formatted with StampLayout (or the first later second at which
// none of them is taken). On any failure nothing of the set is left: the
// temporaries are removed, the renames already done undone, and a fixed
// name's previous file restored.
func (s *Set) Commit(stamp time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		if s.err != nil {
			return s.err
		}
		return errors.New("output set already committed or aborted")
	}
	err := s.commitLocked(stamp)
	if err != nil {
		s.abortLocked()
		s.err = err
		return err
	}
	s.done = true
	unregister(s)
	return nil
}

func (s *Set) commitLocked(stamp time.Time) error {
	var stamped, fixed []*File
	for _, f := range s.files {
		if f.dropped {
			continue
		}
		if err := f.f.Close(); err != nil {
			return fmt.Errorf("write %s: %w", f.display(), bare(err))
		}
		if err := os.Chmod(f.tmp, f.mode); err != nil {
			return fmt.Errorf("write %s: %w", f.display(), bare(err))
		}
		if f.name.Stamped {
			stamped = append(stamped, f)
		} else {
			fixed = append(fixed, f)
		}
	}
	if err := s.placeStamped(stamped, stamp); err != nil {
		return err
	}
	if err := s.placeFixed(fixed); err != nil {
		for _, f := range stamped {
			unplace(f)
		}
		return err
	}
	for _, f := range stamped {
		if !f.moved {
			os.Remove(f.tmp) // the final name is a second link to it
		}
	}
	return nil
}

// placeStamped links the stamped files to their final names, moving to
// the next second when a name is taken. A link never replaces a file.
func (s *Set) placeStamped(files []*File, stamp time.Time) error {
	if len(files) == 0 {
		return nil
	}
	seen := map[string]bool{}
	for i := 0; i < maxStampTries; i++ {
		st := stamp.Add(time.Duration(i) * time.Second).Format(StampLayout)
		var placed []*File
		taken := false
		clear(seen)
		for _, f := range files {
			p := filepath.Join(f.dir, f.name.with(st))
			if seen[p] {
				return fmt.Errorf("write %s: two files of one run have this name", p)
			}
			seen[p] = true
			moved, err := linkNoReplace(f.tmp, p)
			if errors.Is(err, fs.ErrExist) {
				taken = true
				break
			}
			if err != nil {
				for _, g := range placed {
					unplace(g)
				}
				return fmt.Errorf("write %s: %w", p, bare(err))
			}
			f.path, f.moved = p, moved
			placed = append(placed, f)
		}
		if !taken {
			return nil
		}
		for _, g := range placed {
			unplace(g)
		}
	}
	return fmt.Errorf("write %s: expected a free name, found every stamp from %s on taken for %d seconds",
		filepath.Join(files[0].dir, files[0].name.with(stamp.Format(StampLayout))), stamp.Format(StampLayout), maxStampTries)
}

// linkNoReplace gives the file at tmp the second name final, failing
// with fs.ErrExist when final exists. On a file system without hard links
// it renames tmp to final after a check (not atomic against another run)
// and reports moved.
func linkNoReplace(tmp, final string) (moved bool, err error) {
	err = os.Link(tmp, final)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return false, err
	}
	if _, serr := os.Lstat(final); serr == nil {
		return false, fs.ErrExist
	}
	if rerr := os.Rename(tmp, final); rerr != nil {
		return false, err
	}
	return true, nil
}

// unplace takes a stamped file's final name back.
func unplace(f *File) {
	if f.moved {
		os.Rename(f.path, f.tmp)
		f.moved = false
	} else {
		os.Remove(f.path)
	}
	f.path = ""
}

// placeFixed renames the fixed-name files into place, keeping a link to
// any file they replace so that a later failure can restore it.
func (s *Set) placeFixed(files []*File) error {
	type done struct {
		f      *File
		backup string // "" when nothing was replaced
	}
	var did []done
	undo := func() {
		for i := len(did) - 1; i >= 0; i-- {
			d := did[i]
			if d.backup != "" {
				os.Rename(d.backup, d.f.path)
			} else {
				os.Remove(d.f.path)
			}
			d.f.path = ""
		}
	}
	seen := map[string]bool{}
	for _, f := range files {
		p := filepath.Join(f.dir, f.name.with(""))
		if seen[p] {
			undo()
			return fmt.Errorf("write %s: two files of one run have this name", p)
		}
		seen[p] = true
		backup := ""
		if st, err := os.Lstat(p); err == nil {
			if st.IsDir() {
				undo()
				return &source.Error{File: p, Expected: "a file name to write", Found: "a folder"}
			}
			b, err := os.CreateTemp(f.dir, ".layermap-*.bak")
			if err == nil {
				b.Close()
				os.Remove(b.Name())
				if os.Link(p, b.Name()) == nil {
					backup = b.Name()
				}
			}
		}
		if err := os.Rename(f.tmp, p); err != nil {
			if backup != "" {
				os.Remove(backup)
			}
			undo()
			return fmt.Errorf("write %s: %w", p, bare(err))
		}
		f.path = p
		did = append(did, done{f, backup})
	}
	for _, d := range did {
		if d.backup != "" {
			os.Remove(d.backup)
		}
	}
	return nil
}

// bare drops the operation and the temporary file's name from a path
// error ("open dir/.layermap-1.tmp: no space left on device" -> "no space
// left on device"): messages name the final file instead.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
