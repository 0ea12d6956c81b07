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
	"sync"

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

// parsedFile is the parse of one file's exact content. Entries are never
// modified once stored; their nodes are handed out as copies.
type parsedFile struct {
	data  []byte
	nodes []*yaml.RNode // with reader annotations
	krm   bool
	err   error

	viewsOnce sync.Once
	views     []View // nodes without reader annotations, made on first use
}

// readViews returns the entry's resources as views, made once: they share
// every subtree with nodes but the path to the reader annotations.
func (e *parsedFile) readViews() []View {
	e.viewsOnce.Do(func() {
		e.views = make([]View, len(e.nodes))
		for i, n := range e.nodes {
			e.views[i] = View{Node: yaml.NewRNode(strippedDoc(n)), Placement: placementOf(n)}
		}
	})
	return e.views
}

// parse returns the cached parse of a file, parsing it when its content
// changed since.
func (p *Package) parse(name string) *parsedFile {
	data := p.files[name]
	if e := p.cached(name); e != nil && bytes.Equal(e.data, data) {
		return e
	}
	e := &parsedFile{data: data}
	e.nodes, e.krm, e.err = parseResources(name, data)
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
		for _, n := range e.nodes {
			out = append(out, n.Copy())
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
// annotations, its Placement says where it was read from.
type View struct {
	Node      *yaml.RNode
	Placement Placement
}

// Views returns the KRM resources Resources returns, in the same order,
// without copying them. It is for reading only (comparing, merging from,
// collecting facts); a caller that changes resources uses Resources.
func (p *Package) Views() ([]View, error) {
	files, err := p.resourceFiles()
	if err != nil {
		return nil, err
	}
	var out []View
	for _, e := range files {
		out = append(out, e.readViews()...)
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

func parseResources(name string, data []byte) ([]*yaml.RNode, bool, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	seqIndent := yaml.DeriveSeqIndentStyle(string(data))
	var nodes []*yaml.RNode
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
		SetPlacement(n, Placement{Path: name, Index: index, SeqIndent: seqIndent})
		nodes = append(nodes, n)
		index++
	}
	return nodes, len(nodes) > 0, nil
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

// TakePlacement removes the reader annotations from a resource and returns
// the placement they recorded (Index -1 when absent).
func TakePlacement(n *yaml.RNode) Placement {
	pl := Placement{Index: -1}
	ann := annotationsNode(n, false)
	if ann == nil {
		return pl
	}
	get := func(k string) string {
		for i := 0; i+1 < len(ann.Content); i += 2 {
			if ann.Content[i].Value == k {
				return ann.Content[i+1].Value
			}
		}
		return ""
	}
	pl.Path = get(kioutil.PathAnnotation)
	if pl.Path == "" {
		pl.Path = get(kioutil.LegacyPathAnnotation)
	}
	idx := get(kioutil.IndexAnnotation)
	if idx == "" {
		idx = get(kioutil.LegacyIndexAnnotation)
	}
	if v, err := strconv.Atoi(idx); err == nil {
		pl.Index = v
	}
	pl.SeqIndent = get(kioutil.SeqIndentAnnotation)
	clearReaderAnnotations(n)
	return pl
}

// clearReaderAnnotations removes the reader annotations, and an
// annotations map left empty by that.
func clearReaderAnnotations(n *yaml.RNode) {
	md := yamlutil.Field(n.YNode(), "metadata")
	ann := yamlutil.Field(md, "annotations")
	if ann == nil {
		return
	}
	kept := ann.Content[:0:0]
	for i := 0; i+1 < len(ann.Content); i += 2 {
		k := ann.Content[i].Value
		drop := false
		for _, r := range readerAnnotations {
			if k == r {
				drop = true
				break
			}
		}
		if !drop {
			kept = append(kept, ann.Content[i], ann.Content[i+1])
		}
	}
	ann.Content = kept
	if len(kept) == 0 {
		removeKey(md, "annotations")
	}
}

func removeKey(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i:i], m.Content[i+2:]...)
			return
		}
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
// touched. nodes are not modified.
func (p *Package) SetResources(nodes []*yaml.RNode) error {
	type entry struct {
		view  *yaml.Node // the document without reader annotations
		pl    Placement
		order int
	}
	byFile := map[string][]entry{}
	for i, n := range nodes {
		pl := placementOf(n)
		view := strippedDoc(n)
		if pl.Path == "" {
			pl.Path = DefaultFileName(n)
		}
		if err := ValidPath(pl.Path); err != nil {
			return fmt.Errorf("resource %s/%s: %w", n.GetKind(), n.GetName(), err)
		}
		if pl.Index < 0 {
			pl.Index = len(nodes) + i
		}
		byFile[pl.Path] = append(byFile[pl.Path], entry{view: view, pl: pl, order: i})
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
		views := make([]*yaml.Node, len(entries))
		for i, e := range entries {
			views[i] = e.view
			if seqIndent == "" {
				seqIndent = e.pl.SeqIndent
			}
		}
		if _, ok := p.files[name]; ok && p.unchanged(name, views) {
			continue // keep the exact bytes of a file whose resources did not change
		}
		data, err := encodeDocs(views, seqIndent)
		if err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
		if p.files == nil {
			p.files = map[string][]byte{}
		}
		p.files[name] = data
		// Cache what was just written, so the next read does not parse it.
		cached := make([]*yaml.RNode, len(views))
		for i, v := range views {
			cached[i] = yaml.NewRNode(yaml.CopyYNode(v))
			SetPlacement(cached[i], Placement{Path: name, Index: i, SeqIndent: seqIndent})
		}
		p.store(name, &parsedFile{data: data, nodes: cached, krm: true})
	}
	return nil
}

// unchanged reports whether views are exactly (comments and style
// included) the resources parsed from the file's current content.
func (p *Package) unchanged(name string, views []*yaml.Node) bool {
	e := p.parse(name)
	if e.err != nil || !e.krm || len(e.nodes) != len(views) {
		return false
	}
	for i, n := range e.nodes {
		if !yamlutil.Identical(root(strippedDoc(n)), root(views[i])) {
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
