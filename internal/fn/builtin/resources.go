package builtin

import (
	"context"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// ensureNameSubstring makes sure every resource name contains a substring:
// data.prepend is added in front of names that do not start with it,
// data.append after names that do not end with it. Local configuration
// and the package context are left alone.
func ensureNameSubstring(_ context.Context, rl *framework.ResourceList) error {
	d := configData(rl.FunctionConfig)
	prepend, appendS := d["prepend"], d["append"]
	if prepend == "" && appendS == "" {
		return fail(rl, "ensure-name-substring: one of data.prepend and data.append is required")
	}
	for _, n := range rl.Items {
		if isLocalConfig(n) {
			continue
		}
		name := n.GetName()
		if prepend != "" && !strings.HasPrefix(name, prepend) {
			name = prepend + name
		}
		if appendS != "" && !strings.HasSuffix(name, appendS) {
			name += appendS
		}
		if err := setMetadata(n, yaml.NameField, name); err != nil {
			return err
		}
	}
	return nil
}

// upsertResource adds the functionConfig as a resource, replacing the one
// with the same apiVersion, kind, namespace and name if there is one.
func upsertResource(_ context.Context, rl *framework.ResourceList) error {
	r := rl.FunctionConfig
	if r == nil || r.GetKind() == "" || r.GetName() == "" {
		return fail(rl, "upsert-resource: the functionConfig must be the resource to upsert (with kind and metadata.name)")
	}
	r = r.Copy()
	for i, n := range rl.Items {
		if n.GetApiVersion() == r.GetApiVersion() && n.GetKind() == r.GetKind() && n.GetNamespace() == r.GetNamespace() && n.GetName() == r.GetName() {
			// Keep the file the resource lives in.
			if p := n.GetAnnotations()[kioutil.PathAnnotation]; p != "" {
				if err := r.PipeE(yaml.SetAnnotation(kioutil.PathAnnotation, p)); err != nil {
					return err
				}
			}
			rl.Items[i] = r
			info(rl, "upsert-resource: replaced %s %s", r.GetKind(), r.GetName())
			return nil
		}
	}
	rl.Items = append(rl.Items, r)
	info(rl, "upsert-resource: added %s %s", r.GetKind(), r.GetName())
	return nil
}

// removeResources deletes resources: those matching all of data.kind,
// data.apiVersion, data.name and data.namespace that are set, or, with no
// data, every resource the function's selectors picked.
func removeResources(_ context.Context, rl *framework.ResourceList) error {
	d := configData(rl.FunctionConfig)
	var kept []*yaml.RNode
	removed := 0
	for _, n := range rl.Items {
		match := (d["kind"] == "" || d["kind"] == n.GetKind()) &&
			(d["apiVersion"] == "" || d["apiVersion"] == n.GetApiVersion()) &&
			(d["name"] == "" || d["name"] == n.GetName()) &&
			(d["namespace"] == "" || d["namespace"] == n.GetNamespace())
		if match {
			removed++
			continue
		}
		kept = append(kept, n)
	}
	rl.Items = kept
	info(rl, "remove-resources: removed %d resources", removed)
	return nil
}
