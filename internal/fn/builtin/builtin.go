// Package builtin implements the KRM functions Scion runs in process, by
// the names of the kpt function catalog: set-namespace, set-labels,
// set-annotations, set-image, apply-replacements, apply-setters,
// search-replace, starlark, ensure-name-substring, upsert-resource, and
// remove-resources (which deletes the resources its selectors pick).
package builtin

import (
	"fmt"
	"sort"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/scion-dev/scion/internal/fn"
)

// Functions returns the builtin functions by name. The map is new on each
// call; the functions hold no state.
func Functions() map[string]fn.Function {
	return map[string]fn.Function{
		"set-namespace":         fn.FunctionFunc(setNamespace),
		"set-labels":            fn.FunctionFunc(setLabels),
		"set-annotations":       fn.FunctionFunc(setAnnotations),
		"set-image":             fn.FunctionFunc(setImage),
		"apply-replacements":    fn.FunctionFunc(applyReplacements),
		"apply-setters":         fn.FunctionFunc(applySetters),
		"search-replace":        fn.FunctionFunc(searchReplace),
		"starlark":              fn.FunctionFunc(starlarkRun),
		"ensure-name-substring": fn.FunctionFunc(ensureNameSubstring),
		"upsert-resource":       fn.FunctionFunc(upsertResource),
		"remove-resources":      fn.FunctionFunc(removeResources),
	}
}

// Names lists the builtin function names, sorted.
func Names() []string {
	var out []string
	for name := range Functions() {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// NewRuntime returns a function runtime that knows the builtins.
func NewRuntime() *fn.Runtime {
	return &fn.Runtime{Builtins: Functions()}
}

// ServerRuntime runs builtin functions, and as containers only the images
// allowed (fn.Runtime.ContainerImages; none when empty), with runner when
// it is not nil (the server's function Pods), never exec ones:
// for pipelines that come from packages and their authors (the
// controller's variants, pushes through the API server), not from whoever
// runs the process.
func ServerRuntime(images []string, runner fn.ImageRunner) *fn.Runtime {
	rt := NewRuntime()
	rt.DisableExec = true
	rt.RestrictImages = true
	rt.ContainerImages = images
	rt.Images = runner
	return rt
}

// configData returns the data map of a ConfigMap-like functionConfig.
//
// A typed functionConfig (the catalog's SetNamespace, EnsureNameSubstring,
// ...: any kind but ConfigMap) gives its top-level string fields instead,
// as the catalog's functions read them.
func configData(config *yaml.RNode) map[string]string {
	if config == nil {
		return map[string]string{}
	}
	if config.GetKind() == "ConfigMap" || config.Field("data") != nil {
		return config.GetDataMap()
	}
	out := map[string]string{}
	_ = config.VisitFields(func(f *yaml.MapNode) error {
		k := f.Key.YNode().Value
		if v := f.Value.YNode(); v.Kind == yaml.ScalarNode && k != "apiVersion" && k != "kind" {
			out[k] = v.Value
		}
		return nil
	})
	return out
}

// fail records an error result and returns it as an error.
func fail(rl *framework.ResourceList, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	rl.Results = append(rl.Results, &framework.Result{Message: msg, Severity: framework.Error})
	return fmt.Errorf("%s", msg)
}

func info(rl *framework.ResourceList, format string, args ...any) {
	rl.Results = append(rl.Results, &framework.Result{Message: fmt.Sprintf(format, args...), Severity: framework.Info})
}

// isLocalConfig reports whether a resource is local configuration, never
// applied to a cluster.
func isLocalConfig(n *yaml.RNode) bool {
	return n.GetAnnotations()["config.kubernetes.io/local-config"] == "true"
}

// setMetadata sets metadata.<field> (name or namespace) to value, as a
// string: a name such as "123" stays one. An existing field is set in
// place, keeping its style and comments, so that rendering a package again
// leaves a node that already held the value as it was.
func setMetadata(n *yaml.RNode, field, value string) error {
	cur, err := n.Pipe(yaml.Lookup(yaml.MetadataField, field))
	if err != nil {
		return err
	}
	if cur != nil && cur.YNode().Kind == yaml.ScalarNode {
		y := cur.YNode()
		y.Value, y.Tag = value, yaml.NodeTagString
		return nil
	}
	return n.SetMapField(yaml.NewStringRNode(value), yaml.MetadataField, field)
}
