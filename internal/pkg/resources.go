package pkg

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/scion-dev/scion/internal/yamlutil"
)

// IsResourceFile reports whether a file may hold KRM resources: a .yaml or
// .yml file. The Kptfile is not one of them.
func IsResourceFile(name string) bool {
	ext := path.Ext(name)
	return ext == ".yaml" || ext == ".yml"
}

// parsedFile is the parse of one file's exact content: its KRM resources as
// views (documents without reader annotations, and where each sits).
// Entries and their nodes are never modified once stored: readers get the
// views to read, or copies to change.
type parsedFile struct {
	data  []byte
	views []View
	krm   bool
	err   error
}

// parse returns the cached parse of a file, parsing it when its content
// changed since.
func (p *Package) parse(name string) *parsedFile {
	data := p.files[name]
	if e := p.cached(name); e != nil && bytes.Equal(e.data, data) {
		return e
	}
	e := &parsedFile{data: data}
	e.views, e.krm, e.err = parseResources(name, data)
	p.store(name, e)
	return e
}

func (p *Package) cached(name string) *parsedFile {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cache[name]
}

// store records a cache entry (nil removes it).
func (p *Package) store(name string, e *parsedFile) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e == nil {
		delete(p.cache, name)
		return
	}
	if p.cache == nil {
		p.cache = map[string]*parsedFile{}
	}
	p.cache[name] = e
}

// Resources parses the KRM resources of every YAML file, in path order and
// then document order. Each carries the internal.config.kubernetes.io/path
// and index annotations (and their legacy config.kubernetes.io twins, as
// KRM functions expect) and the sequence indentation of its file. YAML
// files whose documents are not all KRM objects (apiVersion and kind) are
// not resources and are left out. The nodes are the caller's to change.
func (p *Package) Resources() ([]*yaml.RNode, error) {
	files, err := p.resourceFiles()
	if err != nil {
		return nil, err
	}
	var out []*yaml.RNode
	for _, e := range files {
		for _, v := range e.views {
			n := v.Node.Copy()
			SetPlacement(n, v.Placement)
			out = append(out, n)
		}
	}
	return out, nil
}

// resourceFiles returns the parses of the files holding KRM resources, in
// path order, or the first parse error.
func (p *Package) resourceFiles() ([]*parsedFile, error) {
	var out []*parsedFile
	for _, name := range p.Paths() {
		if !IsResourceFile(name) {
			continue
		}
		e := p.parse(name)
		if e.err != nil {
			return nil, e.err
		}
		if e.krm {
			out = append(out, e)
		}
	}
	return out, nil
}

// View is a KRM resource read without copying it: Node shares its
// structure with the package's parse (and with every other reader of the
// same content) and must not be modified; it carries no reader
// annotations, its Placement says where it was read from (or, given to
// SetViews, where it goes).
type View struct {
	Node      *yaml.RNode
	Placement Placement
}

// Views returns the KRM resources Resources returns, in the same order,
// without copying them: the slice is the caller's, the nodes are not. It
// is for reading (comparing, merging from, collecting facts) and for
// editing by copy: change a copy of one view, put it in the slice and hand
// the slice to SetViews. A caller that changes many resources in place
// uses Resources.
func (p *Package) Views() ([]View, error) {
	files, err := p.resourceFiles()
	if err != nil {
		return nil, err
	}
	var out []View
	for _, e := range files {
		out = append(out, e.views...)
	}
	return out, nil
}

// ResourceFiles returns the set of files that hold KRM resources (the files
// Resources reads). Other files, the Kptfiles included, are plain files.
func (p *Package) ResourceFiles() map[string]bool {
	out := map[string]bool{}
	for name := range p.files {
		if IsResourceFile(name) {
			if e := p.parse(name); e.err == nil && e.krm {
				out[name] = true
			}
		}
	}
	return out
}

func parseResources(name string, data []byte) ([]View, bool, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	seqIndent := yaml.DeriveSeqIndentStyle(string(data))
	var views []View
	for index := 0; ; {
		doc := &yaml.Node{}
		err := dec.Decode(doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, false, fmt.Errorf("parsing %s: %w", name, err)
		}
		if len(doc.Content) == 0 || (doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null") {
			continue // an empty document
		}
		n := yaml.NewRNode(doc)
		if doc.Content[0].Kind != yaml.MappingNode || n.GetApiVersion() == "" || n.GetKind() == "" {
			return nil, false, nil
		}
		// Reader annotations written in the file are not kept: the
		// placement is where the resource is.
		views = append(views, View{Node: yaml.NewRNode(strippedDoc(n)), Placement: Placement{Path: name, Index: index, SeqIndent: seqIndent}})
		index++
	}
	return views, len(views) > 0, nil
}

// Placement is where a resource is written: its file, its position in the
// file and the sequence indentation style of the file.
type Placement struct {
	Path      string
	Index     int
	SeqIndent string
}

// readerAnnotations are the annotations SetPlacement sets.
var readerAnnotations = []string{
	kioutil.PathAnnotation, kioutil.LegacyPathAnnotation,
	kioutil.IndexAnnotation, kioutil.LegacyIndexAnnotation,
	kioutil.SeqIndentAnnotation,
	kioutil.IdAnnotation, kioutil.LegacyIdAnnotation,
}

// SetPlacement records a resource's placement in its reader annotations.
// An Index below 0 leaves the index unset (the resource goes after the
// others of its file).
func SetPlacement(n *yaml.RNode, pl Placement) {
	ann := annotationsNode(n, true)
	setString(ann, kioutil.PathAnnotation, pl.Path)
	setString(ann, kioutil.LegacyPathAnnotation, pl.Path)
	if pl.Index >= 0 {
		setString(ann, kioutil.IndexAnnotation, strconv.Itoa(pl.Index))
		setString(ann, kioutil.LegacyIndexAnnotation, strconv.Itoa(pl.Index))
	}
	if pl.SeqIndent != "" {
		setString(ann, kioutil.SeqIndentAnnotation, pl.SeqIndent)
	}
}

// annotationsNode returns the metadata.annotations map, creating it when
// create is set.
func annotationsNode(n *yaml.RNode, create bool) *yaml.Node {
	root := n.YNode()
	md := yamlutil.Field(root, "metadata")
	if md == nil {
		if !create {
			return nil
		}
		md = &yaml.Node{Kind: yaml.MappingNode, Tag: yaml.NodeTagMap}
		root.Content = append(root.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: "metadata"}, md)
	}
	ann := yamlutil.Field(md, "annotations")
	if ann == nil {
		if !create {
			return nil
		}
		ann = &yaml.Node{Kind: yaml.MappingNode, Tag: yaml.NodeTagMap}
		md.Content = append(md.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: "annotations"}, ann)
	}
	if ann.Kind != yaml.MappingNode {
		return nil
	}
	return ann
}

func setString(m *yaml.Node, key, value string) {
	if m == nil {
		return
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = &yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: value}
			return
		}
	}
	m.Content = append(m.Content,
		&yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: key},
		&yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagString, Value: value})
}

// SetResources replaces the package's KRM resources with nodes. Each node
// goes to the file named by its path annotation (a new resource without one
// goes to <kind>_<name>.yaml), in index order (resources without an index
// after the others, in the order given). Resource files whose resources are
// all gone are deleted; a file whose resources are exactly what was read
// from it (comments included) keeps its exact bytes; non-KRM files are not
// touched. nodes are not modified, and stay the caller's.
func (p *Package) SetResources(nodes []*yaml.RNode) error {
	views := make([]View, len(nodes))
	for i, n := range nodes {
		views[i] = View{Node: yaml.NewRNode(strippedDoc(n)), Placement: placementOf(n)}
	}
	return p.setViews(views, false)
}

// SetViews replaces the package's KRM resources as SetResources does, from
// views placed by their Placement rather than by reader annotations (which
// they must not carry): an empty Path is <kind>_<name>.yaml, an Index below
// 0 goes after the others of its file. The views become the package's:
// nobody may modify them afterwards. Views read from packages qualify, and
// so do nodes made for the call; it saves the copy SetResources makes.
func (p *Package) SetViews(views []View) error { return p.setViews(views, true) }

// setViews writes views; owned says that their nodes may be kept as the
// package's parse of what is written, without a copy.
func (p *Package) setViews(views []View, owned bool) error {
	type entry struct {
		doc   *yaml.Node
		pl    Placement
		order int
	}
	byFile := map[string][]entry{}
	for i, v := range views {
		pl := v.Placement
		if pl.Path == "" {
			pl.Path = DefaultFileName(v.Node)
		}
		if err := ValidPath(pl.Path); err != nil {
			return fmt.Errorf("resource %s/%s: %w", v.Node.GetKind(), v.Node.GetName(), err)
		}
		if pl.Index < 0 {
			pl.Index = len(views) + i
		}
		byFile[pl.Path] = append(byFile[pl.Path], entry{doc: v.Node.Document(), pl: pl, order: i})
	}
	// Remove resource files that no longer hold resources.
	for _, name := range p.Paths() {
		if _, ok := byFile[name]; ok || !IsResourceFile(name) {
			continue
		}
		if e := p.parse(name); e.err == nil && e.krm {
			delete(p.files, name)
			p.store(name, nil)
		}
	}
	for name, entries := range byFile {
		sort.SliceStable(entries, func(a, b int) bool {
			if entries[a].pl.Index != entries[b].pl.Index {
				return entries[a].pl.Index < entries[b].pl.Index
			}
			return entries[a].order < entries[b].order
		})
		seqIndent := ""
		docs := make([]*yaml.Node, len(entries))
		for i, e := range entries {
			docs[i] = e.doc
			if seqIndent == "" {
				seqIndent = e.pl.SeqIndent
			}
		}
		if _, ok := p.files[name]; ok && p.unchanged(name, docs) {
			continue // keep the exact bytes of a file whose resources did not change
		}
		data, err := encodeDocs(docs, seqIndent)
		if err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
		if p.files == nil {
			p.files = map[string][]byte{}
		}
		p.files[name] = data
		// Keep what was just written as the file's parse, so the next
		// read does not parse it.
		written := make([]View, len(docs))
		for i, d := range docs {
			if !owned {
				d = yaml.CopyYNode(d)
			}
			written[i] = View{Node: yaml.NewRNode(d), Placement: Placement{Path: name, Index: i, SeqIndent: seqIndent}}
		}
		p.store(name, &parsedFile{data: data, views: written, krm: true})
	}
	return nil
}

// unchanged reports whether docs are exactly (comments and style
// included) the resources parsed from the file's current content.
func (p *Package) unchanged(name string, docs []*yaml.Node) bool {
	e := p.parse(name)
	if e.err != nil || !e.krm || len(e.views) != len(docs) {
		return false
	}
	for i, v := range e.views {
		if !yamlutil.Identical(root(v.Node.Document()), root(docs[i])) {
			return false
		}
	}
	return true
}

// root returns the content of a document node that carries no comments of
// its own (it encodes the same as its content: resources edited in place
// or built by functions are often bare mappings), else the node itself.
func root(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 && n.HeadComment == "" && n.LineComment == "" && n.FootComment == "" {
		return n.Content[0]
	}
	return n
}

// placementOf reads a resource's placement without changing it.
func placementOf(n *yaml.RNode) Placement {
	ann := n.GetAnnotations()
	pl := Placement{Path: ann[kioutil.PathAnnotation], Index: -1, SeqIndent: ann[kioutil.SeqIndentAnnotation]}
	if pl.Path == "" {
		pl.Path = ann[kioutil.LegacyPathAnnotation]
	}
	idx := ann[kioutil.IndexAnnotation]
	if idx == "" {
		idx = ann[kioutil.LegacyIndexAnnotation]
	}
	if v, err := strconv.Atoi(idx); err == nil {
		pl.Index = v
	}
	return pl
}

// strippedDoc returns the document of n without the reader annotations. It
// shares every subtree with n but the path root → metadata → annotations,
// which it copies, so n is not changed.
func strippedDoc(n *yaml.RNode) *yaml.Node {
	doc := n.Document()
	root := n.YNode()
	md := yamlutil.Field(root, "metadata")
	ann := yamlutil.Field(md, "annotations")
	if ann == nil || !hasReaderAnnotation(ann) {
		return doc
	}
	newAnn := *ann
	newAnn.Content = nil
	for i := 0; i+1 < len(ann.Content); i += 2 {
		if !isReaderAnnotation(ann.Content[i].Value) {
			newAnn.Content = append(newAnn.Content, ann.Content[i], ann.Content[i+1])
		}
	}
	newMD := *md
	newMD.Content = nil
	for i := 0; i+1 < len(md.Content); i += 2 {
		if md.Content[i].Value == "annotations" {
			if len(newAnn.Content) > 0 {
				newMD.Content = append(newMD.Content, md.Content[i], &newAnn)
			}
			continue
		}
		newMD.Content = append(newMD.Content, md.Content[i], md.Content[i+1])
	}
	newRoot := *root
	newRoot.Content = make([]*yaml.Node, len(root.Content))
	copy(newRoot.Content, root.Content)
	for i := 0; i+1 < len(newRoot.Content); i += 2 {
		if newRoot.Content[i].Value == "metadata" {
			newRoot.Content[i+1] = &newMD
		}
	}
	if doc == root {
		return &newRoot
	}
	newDoc := *doc
	newDoc.Content = []*yaml.Node{&newRoot}
	return &newDoc
}

func isReaderAnnotation(k string) bool {
	for _, r := range readerAnnotations {
		if k == r {
			return true
		}
	}
	return false
}

func hasReaderAnnotation(ann *yaml.Node) bool {
	for i := 0; i+1 < len(ann.Content); i += 2 {
		if isReaderAnnotation(ann.Content[i].Value) {
			return true
		}
	}
	return false
}

// encodeDocs writes documents separated by ---, with the file's sequence
// indentation.
func encodeDocs(docs []*yaml.Node, seqIndent string) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoderWithOptions(&buf, &yaml.EncoderOptions{SeqIndent: yaml.SequenceIndentStyle(seqIndent)})
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			return nil, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// DefaultFileName is the file a new resource without a path goes to:
// <kind>_<name>.yaml.
func DefaultFileName(n *yaml.RNode) string {
	name := strings.ToLower(n.GetKind()) + "_" + n.GetName() + ".yaml"
	return strings.NewReplacer("/", "_", ":", "_").Replace(name)
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

// PathOf returns the file a resource was read from (or is to be written
// to), from its path annotations.
func PathOf(n *yaml.RNode) string { return placementOf(n).Path }

// SetAnnotation sets an annotation on a resource, as a plain string.
func SetAnnotation(n *yaml.RNode, key, value string) {
	setString(annotationsNode(n, true), key, value)
}
