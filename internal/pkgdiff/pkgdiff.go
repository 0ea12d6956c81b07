// Package pkgdiff computes what one revision of a package changes against
// another, for people to review: resource by resource (a resource is the
// same one when its group, kind, namespace and name, and the package that
// holds it, are the same, whichever file it is in), the Kptfiles apart,
// and plain files, with renamed files recognised.
package pkgdiff

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/pkg"
)

// Action is what happened to a resource or a file.
type Action string

// Actions.
const (
	// Added: only the new revision has it.
	Added Action = "added"
	// Deleted: only the old revision has it.
	Deleted Action = "deleted"
	// Modified: both have it, with different content (a resource may
	// also have moved to another file).
	Modified Action = "modified"
	// Moved: a resource in another file, with the same content.
	Moved Action = "moved"
	// Renamed: a plain file under another name, with the same content.
	Renamed Action = "renamed"
)

// Resource is the change of one KRM resource.
type Resource struct {
	// Package is the (sub)package holding the resource, "" for the
	// package itself.
	Package    string `json:"package,omitempty"`
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	Action     Action `json:"action"`
	// Path is the file holding the resource (in the old revision when
	// it was deleted); FromPath the file it was in when it moved.
	Path     string `json:"path"`
	FromPath string `json:"fromPath,omitempty"`
	// Diff is the unified diff of the resource's YAML ("" when only
	// its file changed).
	Diff string `json:"diff,omitempty"`
}

// ID is the resource's identity as people read it:
// apiVersion/kind/namespace/name (namespace left out when empty), with
// the subpackage in front when it is in one.
func (r Resource) ID() string {
	parts := []string{r.APIVersion, r.Kind}
	if r.Namespace != "" {
		parts = append(parts, r.Namespace)
	}
	id := strings.Join(append(parts, r.Name), "/")
	if r.Package != "" {
		id = r.Package + ": " + id
	}
	return id
}

// File is the change of one file that holds no KRM resource (a Kptfile,
// a README, a non-KRM YAML file).
type File struct {
	Path     string `json:"path"`
	FromPath string `json:"fromPath,omitempty"`
	Action   Action `json:"action"`
	// Diff is the unified diff of the file's text ("" for a rename, or
	// for binary content, see Binary).
	Diff   string `json:"diff,omitempty"`
	Binary bool   `json:"binary,omitempty"`
}

// Diff is what a revision changes against another. Its JSON form is
// documented (docs/diff.md) and stable: fields are only ever added.
type Diff struct {
	// Kptfiles are the changes of the package's Kptfiles (its own and
	// its subpackages'), shown apart from the resources.
	Kptfiles []File `json:"kptfiles,omitempty"`
	// Resources are the changed KRM resources, by identity.
	Resources []Resource `json:"resources,omitempty"`
	// Files are the changes of the other files.
	Files []File `json:"files,omitempty"`
}

// Empty reports whether nothing changed.
func (d *Diff) Empty() bool {
	return len(d.Kptfiles) == 0 && len(d.Resources) == 0 && len(d.Files) == 0
}

// Digest identifies the change: two diffs with the same digest change
// the same things in the same way (what grouping of many revisions' diffs
// compares).
func (d *Diff) Digest() string {
	data, _ := json.Marshal(d)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

// resKey matches a resource across revisions.
type resKey struct {
	pkg, group, kind, namespace, name string
}

type resource struct {
	apiVersion, path, text string
}

// Compute returns what after changes against before; a nil package is an
// empty one (a first revision is all added).
func Compute(before, after *pkg.Package) (*Diff, error) {
	b, err := read(before)
	if err != nil {
		return nil, fmt.Errorf("reading the old revision: %w", err)
	}
	a, err := read(after)
	if err != nil {
		return nil, fmt.Errorf("reading the new revision: %w", err)
	}
	d := &Diff{}
	for _, k := range keys(b.resources, a.resources) {
		br, bok := b.resources[k]
		ar, aok := a.resources[k]
		r := Resource{Package: k.pkg, Kind: k.kind, Namespace: k.namespace, Name: k.name}
		switch {
		case !bok:
			r.Action, r.APIVersion, r.Path, r.Diff = Added, ar.apiVersion, ar.path, unified("", ar.text)
		case !aok:
			r.Action, r.APIVersion, r.Path, r.Diff = Deleted, br.apiVersion, br.path, unified(br.text, "")
		case br.text != ar.text:
			r.Action, r.APIVersion, r.Path, r.Diff = Modified, ar.apiVersion, ar.path, unified(br.text, ar.text)
			if br.path != ar.path {
				r.FromPath = br.path
			}
		case br.path != ar.path:
			r.Action, r.APIVersion, r.Path, r.FromPath = Moved, ar.apiVersion, ar.path, br.path
		default:
			continue
		}
		d.Resources = append(d.Resources, r)
	}
	sort.SliceStable(d.Resources, func(i, j int) bool { return d.Resources[i].ID() < d.Resources[j].ID() })
	for _, f := range files(b.files, a.files) {
		if path.Base(f.Path) == kptfilev1.KptFileName {
			d.Kptfiles = append(d.Kptfiles, f)
		} else {
			d.Files = append(d.Files, f)
		}
	}
	return d, nil
}

func (k resKey) String() string {
	id := k.kind + "/" + k.name
	if k.namespace != "" {
		id = k.kind + "/" + k.namespace + "/" + k.name
	}
	if k.group != "" {
		id = k.group + "/" + id
	}
	if k.pkg != "" {
		id = k.pkg + ": " + id
	}
	return id
}

type side struct {
	resources map[resKey]resource
	files     map[string][]byte
}

func read(p *pkg.Package) (*side, error) {
	s := &side{resources: map[resKey]resource{}, files: map[string][]byte{}}
	if p == nil {
		return s, nil
	}
	views, err := p.Views()
	if err != nil {
		return nil, err
	}
	for _, v := range views {
		n := v.Node
		group := "" // the core group's apiVersion is v1
		if g, _, ok := strings.Cut(n.GetApiVersion(), "/"); ok {
			group = g
		}
		k := resKey{pkg: p.OwningPackage(v.Placement.Path), group: group, kind: n.GetKind(), namespace: n.GetNamespace(), name: n.GetName()}
		if _, dup := s.resources[k]; dup {
			return nil, fmt.Errorf("resource %s appears twice", k)
		}
		text, err := n.String()
		if err != nil {
			return nil, fmt.Errorf("writing %s: %w", k, err)
		}
		s.resources[k] = resource{apiVersion: n.GetApiVersion(), path: v.Placement.Path, text: text}
	}
	krm := p.ResourceFiles()
	for _, name := range p.Paths() {
		if !krm[name] {
			data, _ := p.File(name)
			s.files[name] = data
		}
	}
	return s, nil
}

func keys(a, b map[resKey]resource) []resKey {
	seen := map[resKey]bool{}
	var out []resKey
	for _, m := range []map[resKey]resource{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// files compares the plain files; a file only the old revision has, with
// the content of one only the new revision has, was renamed.
func files(b, a map[string][]byte) []File {
	var out []File
	added := map[string]string{} // content -> name, of files only a has
	var addedNames []string
	for name, data := range a {
		if _, ok := b[name]; !ok {
			addedNames = append(addedNames, name)
			added[string(data)] = name
		}
	}
	sort.Strings(addedNames)
	renamedTo := map[string]bool{}
	var names []string
	for name := range b {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		bd := b[name]
		ad, ok := a[name]
		switch {
		case !ok:
			if to, found := added[string(bd)]; found && !renamedTo[to] {
				renamedTo[to] = true
				out = append(out, File{Path: to, FromPath: name, Action: Renamed})
				continue
			}
			out = append(out, fileChange(name, Deleted, bd, nil))
		case string(bd) != string(ad):
			out = append(out, fileChange(name, Modified, bd, ad))
		}
	}
	for _, name := range addedNames {
		if !renamedTo[name] {
			out = append(out, fileChange(name, Added, nil, a[name]))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func fileChange(name string, action Action, before, after []byte) File {
	f := File{Path: name, Action: action}
	if binary(before) || binary(after) {
		f.Binary = true
		return f
	}
	f.Diff = unified(string(before), string(after))
	return f
}

// binary reports whether data looks like anything but text.
func binary(data []byte) bool {
	return strings.ContainsRune(string(data), 0)
}
