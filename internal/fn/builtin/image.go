package builtin

import (
	"context"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/scion-dev/scion/internal/yamlutil"
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
		yamlutil.Walk(n.YNode(), func(path []string, key, m *yaml.Node) {
			if key != nil || m.Kind != yaml.MappingNode || len(path) == 0 {
				return // containers are list items
			}
			if list := path[len(path)-1]; list != "containers" && list != "initContainers" && list != "ephemeralContainers" {
				return
			}
			img := yamlutil.Field(m, "image")
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
	}
	info(rl, "set-image: %d container images updated", count)
	return nil
}
