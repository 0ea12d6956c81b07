// Package pkg is a KRM package in memory: its files, byte for byte, with
// typed access to its Kptfile and its KRM resources. Reading resources and
// writing them back preserves comments, field order and sequence
// indentation; files that are not KRM are kept as they are.
package pkg

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/kptfile"
)

// Package holds the files of a package, keyed by slash-separated path
// relative to the package root. The zero value is an empty package.
//
// Reading a package (Resources, File, Paths, ...) is safe from several
// goroutines at once; changing it (SetFile, SetResources, ...) is not.
type Package struct {
	files map[string][]byte
	// cache holds the parse of resource files by content; entries are
	// immutable and may be shared between copies of a package.
	mu    sync.Mutex
	cache map[string]*parsedFile
}

// New returns a package with the given files. The map is copied.
func New(files map[string][]byte) *Package {
	p := &Package{files: make(map[string][]byte, len(files))}
	for name, data := range files {
		p.files[name] = bytes.Clone(data)
	}
	return p
}

// Paths returns the paths of all files, sorted.
func (p *Package) Paths() []string {
	out := make([]string, 0, len(p.files))
	for name := range p.files {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Len returns the number of files.
func (p *Package) Len() int { return len(p.files) }

// File returns the content of a file.
func (p *Package) File(name string) ([]byte, bool) {
	data, ok := p.files[name]
	return data, ok
}

// SetFile creates or replaces a file. The name must be a clean relative
// slash-separated path.
func (p *Package) SetFile(name string, data []byte) error {
	if err := ValidPath(name); err != nil {
		return err
	}
	if p.files == nil {
		p.files = map[string][]byte{}
	}
	p.files[name] = data
	return nil
}

// DeleteFile removes a file; removing a missing file is not an error.
func (p *Package) DeleteFile(name string) { delete(p.files, name) }

// Files returns a copy of the file map.
func (p *Package) Files() map[string][]byte {
	out := make(map[string][]byte, len(p.files))
	for name, data := range p.files {
		out[name] = data
	}
	return out
}

// DeepCopy returns an independent copy of the package. The parse cache
// comes along (its entries never change), so the copy does not parse again.
func (p *Package) DeepCopy() *Package {
	c := New(p.files)
	p.mu.Lock()
	defer p.mu.Unlock()
	c.cache = make(map[string]*parsedFile, len(p.cache))
	for k, v := range p.cache {
		c.cache[k] = v
	}
	return c
}

// Equal reports whether two packages have the same files with the same
// content.
func (p *Package) Equal(o *Package) bool {
	if len(p.files) != len(o.files) {
		return false
	}
	for name, data := range p.files {
		od, ok := o.files[name]
		if !ok || !bytes.Equal(data, od) {
			return false
		}
	}
	return true
}

// Kptfile parses the package's root Kptfile.
func (p *Package) Kptfile() (*kptfilev1.KptFile, error) {
	data, ok := p.files[kptfilev1.KptFileName]
	if !ok {
		return nil, errors.New("package has no Kptfile")
	}
	return kptfile.Parse(data)
}

// EditKptfile changes the root Kptfile, preserving what mutate leaves
// unchanged.
func (p *Package) EditKptfile(mutate func(*kptfilev1.KptFile) error) error {
	data, ok := p.files[kptfilev1.KptFileName]
	if !ok {
		return errors.New("package has no Kptfile")
	}
	out, err := kptfile.Edit(data, mutate)
	if err != nil {
		return err
	}
	p.files[kptfilev1.KptFileName] = out
	return nil
}

// ValidPath checks that name is a clean, relative, slash-separated path
// that stays inside the package and that git and every checkout can hold
// (PathProblem says what is wrong).
func ValidPath(name string) error {
	if problem := PathProblem(name); problem != "" {
		return &PathError{Path: name, Problem: problem}
	}
	return nil
}

// InvalidPathReason is the reason of a condition of an object stalled on
// a PathError: a package holds a file no checkout can hold, which no
// retry mends.
const InvalidPathReason = "InvalidPath"

// PathError is a package file path that breaks PathProblem's rule.
// Reconcilers stall on it (StallReason): the package must change.
type PathError struct {
	// Path is the file's path in the package, Problem what is wrong with
	// it.
	Path, Problem string
}

func (e *PathError) Error() string {
	return fmt.Sprintf("invalid package file path %q: %s", e.Path, e.Problem)
}

// StallReason makes reconcilers stall on it (reconciler.Classify).
func (e *PathError) StallReason() string { return InvalidPathReason }

// PathProblem says why name cannot be a package file path, or "": it
// must be clean, relative, slash-separated and stay inside the package;
// valid UTF-8, with no control characters or bidirectional overrides (a
// name that reads as another), no segment that is only spaces, and no
// .git segment in any case or with trailing dots or spaces (git refuses
// to check such a tree out, so one such file would stop every package of
// its repository).
func PathProblem(name string) string {
	if name == "" || path.IsAbs(name) || path.Clean(name) != name || name == "." ||
		strings.HasPrefix(name, "../") || name == ".." || strings.Contains(name, "\\") {
		return "not a clean relative path inside the package (no .., no \\)"
	}
	if !utf8.ValidString(name) {
		return "not UTF-8"
	}
	for _, r := range name {
		if unicode.IsControl(r) || bidiControl(r) {
			return fmt.Sprintf("control character %U", r)
		}
	}
	for _, seg := range strings.Split(name, "/") {
		if strings.TrimSpace(seg) == "" {
			return "a name of only spaces"
		}
		if strings.EqualFold(strings.TrimRight(seg, ". "), ".git") {
			return fmt.Sprintf("%q is git's own folder, which no repository can hold", seg)
		}
	}
	return ""
}

// bidiControl says whether r changes the direction text is shown in
// (U+202A to U+202E, U+2066 to U+2069, and the marks U+200E, U+200F,
// U+061C).
func bidiControl(r rune) bool {
	return r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069 || r == 0x200E || r == 0x200F || r == 0x061C
}

// PathConflict names a file whose path is also a folder of another file
// of paths (Kptfile and Kptfile/x): no tree can hold both. "" when there
// is none.
func PathConflict(paths []string) string {
	files := make(map[string]bool, len(paths))
	for _, p := range paths {
		files[p] = true
	}
	for _, p := range slices.Sorted(slices.Values(paths)) {
		for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
			if files[dir] {
				return fmt.Sprintf("%s is a file, and %s puts a file inside it", dir, p)
			}
		}
	}
	return ""
}

// ReadDir reads a package from a directory on disk. The .git directory is
// skipped; symbolic links are rejected.
func ReadDir(dir string) (*Package, error) {
	p := &Package{files: map[string][]byte{}}
	err := filepath.WalkDir(dir, func(full string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: only regular files are supported in packages", full)
		}
		rel, err := filepath.Rel(dir, full)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(full)
		if err != nil {
			return err
		}
		p.files[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading package %s: %w", dir, err)
	}
	return p, nil
}

// WriteDir writes the package into dir, creating it when needed, and
// removes files under dir that are not part of the package (the .git
// directory is left alone). Empty directories left behind are removed.
func (p *Package) WriteDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("writing package %s: %w", dir, err)
	}
	existing, err := ReadDir(dir)
	if err != nil {
		return err
	}
	for name := range existing.files {
		if _, keep := p.files[name]; !keep {
			if err := os.Remove(filepath.Join(dir, filepath.FromSlash(name))); err != nil {
				return fmt.Errorf("writing package %s: %w", dir, err)
			}
		}
	}
	for _, name := range p.Paths() {
		full := filepath.Join(dir, filepath.FromSlash(name))
		if old, ok := existing.files[name]; ok && bytes.Equal(old, p.files[name]) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("writing package %s: %w", dir, err)
		}
		if err := os.WriteFile(full, p.files[name], 0o644); err != nil {
			return fmt.Errorf("writing package %s: %w", dir, err)
		}
	}
	return removeEmptyDirs(dir)
}

func removeEmptyDirs(root string) error {
	var dirs []string
	err := filepath.WalkDir(root, func(full string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			if full != root {
				dirs = append(dirs, full)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		entries, err := os.ReadDir(dirs[i])
		if err != nil {
			return err
		}
		if len(entries) == 0 {
			if err := os.Remove(dirs[i]); err != nil {
				return err
			}
		}
	}
	return nil
}
