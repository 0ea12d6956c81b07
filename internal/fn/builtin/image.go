package builtin

import (
	"context"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// splitImage splits "registry/name:tag@digest" into name, tag and digest.
func splitImage(image string) (name, tag, digest string) {
	name = image
	if i := strings.Index(name, "@"); i >= 0 {
		name, digest = name[:i], name[i+1:]
	}
	if i := strings.LastIndex(name, ":"); i >= 0 && !strings.Contains(name[i:], "/") {
		name, tag = name[:i], name[i+1:]
	}
	return name, tag, digest
}

// setImage rewrites container images named data.name: data.newName
// replaces the name, data.newTag the tag, data.digest pins a digest.
func setImage(_ context.Context, rl *framework.ResourceList) error {
	d := configData(rl.FunctionConfig)
	want := d["name"]
	if want == "" {
		return fail(rl, "set-image: functionConfig data.name (the image to change) is required")
	}
	if d["newName"] == "" && d["newTag"] == "" && d["digest"] == "" {
		return fail(rl, "set-image: one of data.newName, data.newTag and data.digest is required")
	}
	count := 0
	for _, n := range rl.Items {
		err := walk(n.YNode(), func(parentKey string, m *yaml.Node) {
			if parentKey != "containers" && parentKey != "initContainers" && parentKey != "ephemeralContainers" {
				return
			}
			img := mapField(m, "image")
			if img == nil || img.Kind != yaml.ScalarNode {
				return
			}
			name, tag, digest := splitImage(img.Value)
			if name != want {
				return
			}
			if d["newName"] != "" {
				name = d["newName"]
			}
			if d["newTag"] != "" {
				tag, digest = d["newTag"], ""
			}
			if d["digest"] != "" {
				digest = d["digest"]
			}
			out := name
			if tag != "" {
				out += ":" + tag
			}
			if digest != "" {
				out += "@" + digest
			}
			img.Value = out
			count++
		})
		if err != nil {
			return err
		}
	}
	info(rl, "set-image: %d container images updated", count)
	return nil
}

// walk calls fn for every mapping node that is an element of a list, with
// the key of that list.
func walk(n *yaml.Node, fn func(parentKey string, m *yaml.Node)) error {
	var visit func(n *yaml.Node, key string)
	visit = func(n *yaml.Node, key string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				visit(c, key)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				visit(n.Content[i+1], n.Content[i].Value)
			}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				if c.Kind == yaml.MappingNode {
					fn(key, c)
				}
				visit(c, key)
			}
		}
	}
	visit(n, "")
	return nil
}

func mapField(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
