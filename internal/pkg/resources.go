package pkg

import (
	"bytes"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// IsResourceFile reports whether a file may hold KRM resources: a .yaml or
// .yml file. The Kptfile is not one of them.
func IsResourceFile(name string) bool {
	ext := path.Ext(name)
	return ext == ".yaml" || ext == ".yml"
}

// Resources parses the KRM resources of every YAML file, in path order and
// then document order. Each carries the internal.config.kubernetes.io/path
// and index annotations (and their legacy config.kubernetes.io twins, as
// KRM functions expect). YAML files whose documents are not all KRM objects
// (apiVersion and kind) are not resources and are left out.
func (p *Package) Resources() ([]*yaml.RNode, error) {
	var out []*yaml.RNode
	for _, name := range p.Paths() {
		if !IsResourceFile(name) {
			continue
		}
		nodes, ok, err := parseResources(name, p.files[name])
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, nodes...)
		}
	}
	return out, nil
}

func parseResources(name string, data []byte) ([]*yaml.RNode, bool, error) {
	r := &kio.ByteReader{
		Reader:            bytes.NewReader(data),
		PreserveSeqIndent: true,
		SetAnnotations: map[string]string{
			kioutil.PathAnnotation:       name,
			kioutil.LegacyPathAnnotation: name,
		},
	}
	nodes, err := r.Read()
	if err != nil {
		return nil, false, fmt.Errorf("parsing %s: %w", name, err)
	}
	for _, n := range nodes {
		if n.GetApiVersion() == "" || n.GetKind() == "" {
			return nil, false, nil
		}
		// The ByteReader sets the index annotations; keep the legacy one in
		// step for functions that still read it.
		if idx := n.GetAnnotations()[kioutil.IndexAnnotation]; idx != "" {
			if err := n.PipeE(yaml.SetAnnotation(kioutil.LegacyIndexAnnotation, idx)); err != nil {
				return nil, false, err
			}
		}
	}
	return nodes, true, nil
}

// readerAnnotations are the annotations Resources adds and SetResources
// strips.
var readerAnnotations = []string{
	kioutil.PathAnnotation, kioutil.LegacyPathAnnotation,
	kioutil.IndexAnnotation, kioutil.LegacyIndexAnnotation,
	kioutil.IdAnnotation, kioutil.LegacyIdAnnotation,
	kioutil.SeqIndentAnnotation,
}

// SetResources replaces the package's KRM resources with nodes. Each node
// goes to the file named by its path annotation (a new resource without one
// goes to <kind>_<name>.yaml), in index order. Resource files whose
// resources are all gone are deleted; files whose content is unchanged keep
// their exact bytes; non-KRM files are not touched.
func (p *Package) SetResources(nodes []*yaml.RNode) error {
	type entry struct {
		node  *yaml.RNode
		index int
		order int
	}
	byFile := map[string][]entry{}
	for i, n := range nodes {
		ann := n.GetAnnotations()
		name := ann[kioutil.PathAnnotation]
		if name == "" {
			name = ann[kioutil.LegacyPathAnnotation]
		}
		if name == "" {
			name = defaultFileName(n)
		}
		if err := ValidPath(name); err != nil {
			return fmt.Errorf("resource %s/%s: %w", n.GetKind(), n.GetName(), err)
		}
		idx := len(nodes) + i
		if s := ann[kioutil.IndexAnnotation]; s != "" {
			if v, err := strconv.Atoi(s); err == nil {
				idx = v
			}
		}
		byFile[name] = append(byFile[name], entry{node: n, index: idx, order: i})
	}
	// Remove resource files that no longer hold resources.
	for _, name := range p.Paths() {
		if _, ok := byFile[name]; ok || !IsResourceFile(name) {
			continue
		}
		if _, isKRM, err := parseResources(name, p.files[name]); err == nil && isKRM {
			delete(p.files, name)
		}
	}
	for name, entries := range byFile {
		sort.SliceStable(entries, func(a, b int) bool {
			if entries[a].index != entries[b].index {
				return entries[a].index < entries[b].index
			}
			return entries[a].order < entries[b].order
		})
		list := make([]*yaml.RNode, len(entries))
		for i, e := range entries {
			list[i] = e.node
		}
		var buf bytes.Buffer
		w := kio.ByteWriter{Writer: &buf, ClearAnnotations: readerAnnotations}
		if err := w.Write(list); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
		if old, ok := p.files[name]; ok && sameResources(name, old, buf.Bytes()) {
			continue
		}
		if err := p.SetFile(name, buf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// sameResources reports whether old, re-serialized, equals the new bytes:
// then the old bytes are kept as they are.
func sameResources(name string, old, new []byte) bool {
	if bytes.Equal(old, new) {
		return true
	}
	nodes, ok, err := parseResources(name, old)
	if err != nil || !ok {
		return false
	}
	var buf bytes.Buffer
	if err := (kio.ByteWriter{Writer: &buf, ClearAnnotations: readerAnnotations}).Write(nodes); err != nil {
		return false
	}
	return bytes.Equal(buf.Bytes(), new)
}

func defaultFileName(n *yaml.RNode) string {
	name := strings.ToLower(n.GetKind()) + "_" + n.GetName() + ".yaml"
	return strings.NewReplacer("/", "_", ":", "_").Replace(name)
}

// ResourceFiles returns the set of files that hold KRM resources (the files
// Resources reads). Other files, the Kptfiles included, are plain files.
func (p *Package) ResourceFiles() map[string]bool {
	out := map[string]bool{}
	for name, data := range p.files {
		if !IsResourceFile(name) {
			continue
		}
		if _, ok, err := parseResources(name, data); err == nil && ok {
			out[name] = true
		}
	}
	return out
}

// Subpackages returns the folders (relative to the root) that hold a
// Kptfile of their own, sorted; the root is not included.
func (p *Package) Subpackages() []string {
	var out []string
	for _, name := range p.Paths() {
		if strings.HasSuffix(name, "/Kptfile") {
			out = append(out, strings.TrimSuffix(name, "/Kptfile"))
		}
	}
	return out
}

// OwningPackage returns the folder of the (sub)package a file belongs to:
// the deepest folder holding a Kptfile above it, "" for the root.
func (p *Package) OwningPackage(file string) string {
	dir := path.Dir(file)
	for dir != "." && dir != "/" {
		if _, ok := p.files[dir+"/Kptfile"]; ok {
			return dir
		}
		dir = path.Dir(dir)
	}
	return ""
}
