package builtin

import (
	"context"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/scion-dev/scion/internal/yamlutil"
)

var (
	setterCommentRE = regexp.MustCompile(`kpt-set:\s*(.+)$`)
	setterRefRE     = regexp.MustCompile(`\$\{([^}]+)\}`)
)

// applySetters sets fields marked with a "# kpt-set: <pattern>" comment,
// where <pattern> refers to setters as ${name}: a scalar becomes the
// pattern with each setter replaced by its value; a list marked with a
// lone ${name} becomes the setter's value read as a YAML list ("[a, b]" or
// one item per line).
func applySetters(_ context.Context, rl *framework.ResourceList) error {
	setters := configData(rl.FunctionConfig)
	if c := rl.FunctionConfig; c != nil && c.GetKind() != "ConfigMap" {
		// The catalog's typed ApplySetters lists them under setters.
		if m, err := c.Pipe(yaml.Lookup("setters")); err == nil && m != nil {
			setters = map[string]string{}
			_ = m.VisitFields(func(f *yaml.MapNode) error {
				setters[f.Key.YNode().Value] = f.Value.YNode().Value
				return nil
			})
		}
	}
	if len(setters) == 0 {
		// As the catalog's: no setters is nothing to do.
		info(rl, "apply-setters: no setters given: nothing to do")
		return nil
	}
	count := 0
	for _, n := range rl.Items {
		var err error
		yamlutil.Walk(n.YNode(), func(_ []string, key, value *yaml.Node) {
			comment := value.LineComment
			if comment == "" && key != nil {
				comment = key.LineComment
			}
			m := setterCommentRE.FindStringSubmatch(comment)
			if m == nil || err != nil {
				return
			}
			pattern := strings.TrimSpace(m[1])
			refs := setterRefRE.FindAllStringSubmatch(pattern, -1)
			for _, r := range refs {
				if _, ok := setters[r[1]]; !ok {
					return // not all setters given: leave the field alone
				}
			}
			if value.Kind == yaml.SequenceNode {
				if len(refs) != 1 || refs[0][0] != pattern {
					return
				}
				var items []string
				if uerr := yaml.Unmarshal([]byte(setters[refs[0][1]]), &items); uerr != nil {
					err = fail(rl, "apply-setters: setter %s must be a list for the list at %s: %v", refs[0][1], keyName(key), uerr)
					return
				}
				value.Content = nil
				for _, it := range items {
					value.Content = append(value.Content, yaml.NewStringRNode(it).YNode())
				}
				count++
				return
			}
			if value.Kind != yaml.ScalarNode {
				return
			}
			value.Value = setterRefRE.ReplaceAllStringFunc(pattern, func(ref string) string {
				return setters[setterRefRE.FindStringSubmatch(ref)[1]]
			})
			// A whole-value setter takes the type of its value (a number
			// stays a number); a pattern makes a string.
			value.Tag, value.Style = yaml.NodeTagString, 0
			if setterRefRE.FindString(pattern) == pattern {
				value.Tag = resolvedTag(value.Value)
			}
			count++
		})
		if err != nil {
			return err
		}
	}
	info(rl, "apply-setters: %d fields set", count)
	return nil
}

func resolvedTag(v string) string {
	var out any
	if err := yaml.Unmarshal([]byte(v), &out); err != nil {
		return yaml.NodeTagString
	}
	switch out.(type) {
	case int, int64, uint64:
		return yaml.NodeTagInt
	case float64:
		return yaml.NodeTagFloat
	case bool:
		return yaml.NodeTagBool
	default:
		return yaml.NodeTagString
	}
}

func keyName(k *yaml.Node) string {
	if k == nil {
		return "(list item)"
	}
	return k.Value
}
