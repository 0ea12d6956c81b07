package deps

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/scion-dev/scion/internal/kptfile"
	"github.com/scion-dev/scion/internal/pkg"
)

// LoadCatalog reads a catalog laid out on disk: every folder
// DIR/<package path>/<version>/ holding a Kptfile is one published
// revision of <package path>, <version> being semver with or without a
// leading v, or v<N> (N.0.0). A revision whose declaration does not read
// is kept as unusable (it fails only the requests that reach it); a folder
// that does not fit the layout is an error.
func LoadCatalog(dir string) (*Catalog, error) {
	c := NewCatalog()
	err := walkPackages(dir, func(rel string, p *pkg.Package) error {
		name, ver := path.Split(rel)
		name = strings.TrimSuffix(name, "/")
		if name == "" {
			return fmt.Errorf("%s: a catalog revision is a folder <package path>/<version>/ holding a Kptfile", filepath.Join(dir, rel))
		}
		if _, err := ParseVersion(ver); err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(dir, rel), err)
		}
		return c.AddPackage(name, ver, p)
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// AddPackage adds the published revision of package name at version ver
// (semver with or without a leading v, or vN for N.0.0) with files p: its
// declaration read from them, or why it cannot be (then it is never
// chosen).
func (c *Catalog) AddPackage(name, ver string, p *pkg.Package) error {
	v, err := ParseVersion(ver)
	if err != nil {
		return err
	}
	r := &Revision{Package: name, Version: v}
	r.Decl, r.Err = ParsePackage(p)
	return c.Add(r)
}

// LoadInstalled reads a deployment repository's checkout: every folder
// with a Kptfile (nested subpackages belong to theirs) is an installed
// package. Its identity is its Kptfile's upstreamLock: git.directory is
// the package path, the last element of git.ref its version (web/v1.2.0
// is 1.2.0). A package with no upstream lock, or a ref that is no
// version, is installed without a version under its folder's name (or the
// locked directory).
func LoadInstalled(dir string) ([]Installed, error) {
	var out []Installed
	err := walkPackages(dir, func(rel string, p *pkg.Package) error {
		data, _ := p.File("Kptfile")
		kf, err := kptfile.Parse(data)
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(dir, rel), err)
		}
		r := &Revision{Package: rel}
		if rel == "." {
			r.Package = filepath.Base(dir)
		}
		if l := kf.UpstreamLock; l != nil && (l.Git != nil || l.OCI != nil) {
			if l.Git != nil {
				if d := strings.Trim(path.Clean("/"+l.Git.Directory), "/"); d != "" {
					r.Package = d
				}
			}
			ref := l.Ref()
			ref = ref[strings.LastIndex(ref, "/")+1:]
			if v, err := ParseVersion(ref); err == nil && ref != "" {
				r.Version = v
			}
		}
		r.Decl, err = ParsePackage(p)
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(dir, rel), err)
		}
		out = append(out, Installed{Dir: rel, Revision: r})
		return nil
	})
	return out, err
}

// walkPackages calls fn for every top-most folder under dir holding a
// Kptfile, with its path relative to dir and its files.
func walkPackages(dir string, fn func(rel string, p *pkg.Package) error) error {
	if st, err := os.Stat(dir); err != nil {
		return err
	} else if !st.IsDir() {
		return fmt.Errorf("%s is not a folder", dir)
	}
	return filepath.WalkDir(dir, func(full string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if d.Name() == ".git" {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(full, "Kptfile")); errors.Is(err, fs.ErrNotExist) {
			return nil
		} else if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, full)
		if err != nil {
			return err
		}
		p, err := pkg.ReadDir(full)
		if err != nil {
			return err
		}
		if err := fn(filepath.ToSlash(rel), p); err != nil {
			return err
		}
		return filepath.SkipDir
	})
}
