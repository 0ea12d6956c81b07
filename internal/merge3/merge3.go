// Package merge3 merges, field by field, the change between two versions of
// a YAML document (original and updated) into a third (local). It works in
// place on the local tree, so comments, field order and formatting of
// everything upstream did not change are kept. It has no global state and
// is safe for concurrent use.
//
// The rules:
//   - a field upstream did not change keeps its local value;
//   - a field local did not change takes the upstream value (including its
//     removal);
//   - a field both changed: maps merge key by key, lists of maps with a
//     common key (name, containerPort, mountPath, ...) merge element by
//     element, anything else takes the upstream value;
//   - an explicit null upstream removes the field.
package merge3

import (
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/scion-dev/scion/internal/yamlutil"
)

// DefaultListKeys are the fields tried, in order, as the key of a list of
// maps. A field is the key when every element of the three versions has it
// as a scalar and its values are unique within each version.
var DefaultListKeys = []string{"name", "containerPort", "mountPath", "devicePath", "ip", "topologyKey", "conditionType", "type", "key", "port", "id"}

// Options tune a merge.
type Options struct {
	// ListKeys overrides the key candidates for lists at a path, given as
	// dot-separated field names from the document root, such as
	// "pipeline.mutators". Other lists use DefaultListKeys.
	ListKeys map[string][]string
}

// Merge applies the change from original to updated onto local and returns
// the result, which is local edited in place (or a copy of updated where
// local had nothing). A nil node means the document is absent.
func Merge(local, original, updated *yaml.RNode, opts Options) (*yaml.RNode, error) {
	w := &walker{opts: opts}
	n, err := w.merge(ynode(local), ynode(original), ynode(updated), nil)
	if err != nil {
		return nil, err
	}
	if n == nil {
		return nil, nil
	}
	return yaml.NewRNode(n), nil
}

func ynode(n *yaml.RNode) *yaml.Node {
	if n == nil {
		return nil
	}
	y := n.YNode()
	if y.Kind == yaml.DocumentNode && len(y.Content) == 1 {
		return y.Content[0]
	}
	return y
}

type walker struct {
	opts Options
}

func isNull(n *yaml.Node) bool {
	return n != nil && n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func (w *walker) merge(local, orig, upd *yaml.Node, path []string) (*yaml.Node, error) {
	if SameData(orig, upd) {
		return local, nil // no upstream change
	}
	if isNull(upd) || (upd == nil && local != nil) {
		return nil, nil // removed upstream: removed, even if changed locally
	}
	if local == nil {
		return Copy(upd), nil // added upstream, or removed locally and changed upstream
	}
	// Recurse into maps and keyed lists even when local did not change
	// them, so that only the leaves upstream changed are replaced and local
	// comments and formatting stay.
	switch {
	case local.Kind == yaml.MappingNode && upd.Kind == yaml.MappingNode && (orig == nil || orig.Kind == yaml.MappingNode):
		return w.mergeMap(local, orig, upd, path)
	case local.Kind == yaml.SequenceNode && upd.Kind == yaml.SequenceNode && (orig == nil || orig.Kind == yaml.SequenceNode):
		if key := w.listKey(local, orig, upd, path); key != "" {
			return w.mergeList(local, orig, upd, key, path)
		}
	}
	// Scalars, lists without a key, or a change of kind: upstream's value,
	// whether or not local changed it, with local's comments.
	out := Copy(upd)
	keepComments(out, local)
	return out, nil
}

func (w *walker) mergeMap(local, orig, upd *yaml.Node, path []string) (*yaml.Node, error) {
	keys := []string{}
	seen := map[string]bool{}
	for _, m := range []*yaml.Node{local, upd} {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if k := m.Content[i].Value; !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	for _, k := range keys {
		l, o, u := yamlutil.Field(local, k), yamlutil.Field(orig, k), yamlutil.Field(upd, k)
		merged, err := w.merge(l, o, u, append(path, k))
		if err != nil {
			return nil, err
		}
		setField(local, k, merged, upd)
	}
	return local, nil
}

// mergeList merges lists of maps element by element, by key. The result
// keeps the local order; elements added upstream are appended in upstream
// order.
func (w *walker) mergeList(local, orig, upd *yaml.Node, key string, path []string) (*yaml.Node, error) {
	origBy, updBy := index(orig, key), index(upd, key)
	if followsOrigin(local, orig, key) {
		// Local neither reordered nor added elements: take upstream's
		// order (which may put new elements first).
		localBy := index(local, key)
		var out []*yaml.Node
		for _, u := range upd.Content {
			k := yamlutil.Field(u, key).Value
			l, o := localBy[k], origBy[k]
			if l == nil && o != nil && SameData(o, u) {
				continue // removed locally, unchanged upstream
			}
			merged, err := w.merge(l, o, u, append(path, "["+key+"="+k+"]"))
			if err != nil {
				return nil, err
			}
			if merged != nil {
				out = append(out, merged)
			}
		}
		local.Content = out
		return local, nil
	}
	inLocal := map[string]bool{}
	var out []*yaml.Node
	for _, l := range local.Content {
		k := yamlutil.Field(l, key).Value
		inLocal[k] = true
		merged, err := w.merge(l, origBy[k], updBy[k], append(path, "["+key+"="+k+"]"))
		if err != nil {
			return nil, err
		}
		if merged != nil {
			out = append(out, merged)
		}
	}
	for _, u := range upd.Content {
		k := yamlutil.Field(u, key).Value
		if inLocal[k] {
			continue
		}
		o := origBy[k]
		switch {
		case o == nil:
			out = append(out, Copy(u)) // added upstream
		case !SameData(o, u):
			out = append(out, Copy(u)) // removed locally, changed upstream: upstream wins
		}
	}
	local.Content = out
	return local, nil
}

// followsOrigin reports whether local's elements are a subsequence of
// orig's, in orig's order (nothing added or reordered locally).
func followsOrigin(local, orig *yaml.Node, key string) bool {
	if orig == nil {
		return false
	}
	i := 0
	for _, l := range local.Content {
		k := yamlutil.Field(l, key).Value
		for i < len(orig.Content) && yamlutil.Field(orig.Content[i], key).Value != k {
			i++
		}
		if i == len(orig.Content) {
			return false
		}
		i++
	}
	return true
}

func (w *walker) listKey(local, orig, upd *yaml.Node, path []string) string {
	candidates := DefaultListKeys
	if keys, ok := w.opts.ListKeys[strings.Join(path, ".")]; ok {
		candidates = keys
	}
	lists := []*yaml.Node{local, orig, upd}
outer:
	for _, key := range candidates {
		for _, list := range lists {
			if list == nil {
				continue
			}
			seen := map[string]bool{}
			for _, el := range list.Content {
				if el.Kind != yaml.MappingNode {
					return ""
				}
				v := yamlutil.Field(el, key)
				if v == nil || v.Kind != yaml.ScalarNode || seen[v.Value] {
					continue outer
				}
				seen[v.Value] = true
			}
		}
		return key
	}
	return ""
}

func index(list *yaml.Node, key string) map[string]*yaml.Node {
	out := map[string]*yaml.Node{}
	if list == nil {
		return out
	}
	for _, el := range list.Content {
		if v := yamlutil.Field(el, key); v != nil {
			out[v.Value] = el
		}
	}
	return out
}

// setField sets, replaces or (value nil) removes key in m. A new key is
// placed after the key that precedes it in ref (upstream), or at the end.
func setField(m *yaml.Node, key string, value *yaml.Node, ref *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			if value == nil {
				m.Content = append(m.Content[:i], m.Content[i+2:]...)
			} else {
				m.Content[i+1] = value
			}
			return
		}
	}
	if value == nil {
		return
	}
	keyNode := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}
	if ref != nil {
		for i := 0; i+1 < len(ref.Content); i += 2 {
			if ref.Content[i].Value == key {
				keyNode = Copy(ref.Content[i])
				break
			}
		}
	}
	pos := len(m.Content)
	if prev := precedingKey(ref, key); prev != "" {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == prev {
				pos = i + 2
			}
		}
	}
	content := append([]*yaml.Node{}, m.Content[:pos]...)
	content = append(content, keyNode, value)
	m.Content = append(content, m.Content[pos:]...)
}

func precedingKey(ref *yaml.Node, key string) string {
	if ref == nil {
		return ""
	}
	prev := ""
	for i := 0; i+1 < len(ref.Content); i += 2 {
		if ref.Content[i].Value == key {
			return prev
		}
		prev = ref.Content[i].Value
	}
	return ""
}

// keepComments carries the comments of the node being replaced over to its
// replacement, where the replacement has none.
func keepComments(dst, src *yaml.Node) {
	if dst == nil || src == nil {
		return
	}
	if dst.HeadComment == "" {
		dst.HeadComment = src.HeadComment
	}
	if dst.LineComment == "" {
		dst.LineComment = src.LineComment
	}
	if dst.FootComment == "" {
		dst.FootComment = src.FootComment
	}
}

// Copy returns a deep copy of a node.
func Copy(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	if n.Content != nil {
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, ch := range n.Content {
			c.Content[i] = Copy(ch)
		}
	}
	if n.Alias != nil {
		c.Alias = Copy(n.Alias)
	}
	return &c
}

// SameData reports whether two nodes hold the same data, ignoring comments,
// style and the order of map keys. Both nil are equal.
func SameData(a, b *yaml.Node) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if a.Kind == yaml.AliasNode {
		return SameData(a.Alias, b)
	}
	if b.Kind == yaml.AliasNode {
		return SameData(a, b.Alias)
	}
	if a.Kind != b.Kind {
		return false
	}
	switch a.Kind {
	case yaml.ScalarNode:
		return a.Value == b.Value && scalarTag(a) == scalarTag(b)
	case yaml.MappingNode:
		if len(a.Content) != len(b.Content) {
			return false
		}
		for i := 0; i+1 < len(a.Content); i += 2 {
			if !SameData(a.Content[i+1], yamlutil.Field(b, a.Content[i].Value)) {
				return false
			}
		}
		return true
	case yaml.SequenceNode, yaml.DocumentNode:
		if len(a.Content) != len(b.Content) {
			return false
		}
		for i := range a.Content {
			if !SameData(a.Content[i], b.Content[i]) {
				return false
			}
		}
		return true
	default:
		return false
	}
}

// scalarTag normalizes a scalar's tag: a quoted "1" and a plain 1 differ,
// but an explicit !!str and an implicit string do not.
func scalarTag(n *yaml.Node) string {
	if n.Tag != "" {
		return n.Tag
	}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return "!!str"
	}
	return fmt.Sprintf("!!%s", "untagged")
}
