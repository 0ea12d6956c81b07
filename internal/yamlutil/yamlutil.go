// Package yamlutil holds small helpers on raw YAML nodes shared by the
// packages that work below kyaml's RNode.
package yamlutil

import "sigs.k8s.io/kustomize/kyaml/yaml"

// Field returns the value of key in a mapping node, or nil when m is not a
// mapping or has no such key.
func Field(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// Walk calls fn for every value below n, depth first: map values with
// their key node, list items with a nil key. path holds the map keys
// leading to the value (list items share their list's path).
func Walk(n *yaml.Node, fn func(path []string, key, value *yaml.Node)) {
	var visit func(n *yaml.Node, path []string)
	visit = func(n *yaml.Node, path []string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				visit(c, path)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := append(path[:len(path):len(path)], n.Content[i].Value)
				fn(p, n.Content[i], n.Content[i+1])
				visit(n.Content[i+1], p)
			}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				fn(path, nil, c)
				visit(c, path)
			}
		}
	}
	visit(n, nil)
}

// Identical compares two YAML trees exactly: kinds, tags, values, styles,
// comments and key order.
func Identical(a, b *yaml.Node) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	if a.Kind != b.Kind || a.Tag != b.Tag || a.Value != b.Value || a.Style != b.Style || a.Anchor != b.Anchor ||
		a.HeadComment != b.HeadComment || a.LineComment != b.LineComment || a.FootComment != b.FootComment ||
		len(a.Content) != len(b.Content) {
		return false
	}
	if a.Kind == yaml.AliasNode && !Identical(a.Alias, b.Alias) {
		return false
	}
	for i := range a.Content {
		if !Identical(a.Content[i], b.Content[i]) {
			return false
		}
	}
	return true
}

// SameText reports whether two trees encode to the same YAML text.
// Identical trees do, told without encoding them (the common case); others
// are encoded and compared, since a tag or style may make the same text.
func SameText(a, b *yaml.Node) bool {
	if Identical(a, b) {
		return true
	}
	return yaml.NewRNode(a).MustString() == yaml.NewRNode(b).MustString()
}
