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
// data.append after names that do not end with it. Local configuration,
// the package context and Namespace objects are left alone.
func ensureNameSubstring(_ context.Context, rl *framework.ResourceList) error {
	d := configData(rl.FunctionConfig)
	prepend, appendS := d["prepend"], d["append"]
	if sub := d["substring"]; sub != "" {
		// The catalog's typed EnsureNameSubstring: substring and editMode
		// (prepend unless append).
		if d["editMode"] == "append" {
			appendS = sub
		} else {
			prepend = sub
		}
	}
	if prepend == "" && appendS == "" {
		return fail(rl, "ensure-name-substring: one of data.prepend and data.append is required")
	}
	for _, n := range rl.Items {
		// A Namespace keeps its name: the resources in it name it.
		if isLocalConfig(n) || n.GetKind() == "Namespace" {
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
// with the same apiVersion, kind, namespace and name if there is one; a
// functionConfig of kind List upserts each of its items. A resource added
// goes into the file its config.kubernetes.io/target-path annotation
// names, when it has one.
func upsertResource(_ context.Context, rl *framework.ResourceList) error {
	resources := []*yaml.RNode{rl.FunctionConfig}
	if c := rl.FunctionConfig; c != nil && c.GetKind() == "List" && c.GetApiVersion() == "v1" {
		items, err := c.Pipe(yaml.Lookup("items"))
		if err != nil || items == nil {
			return fail(rl, "upsert-resource: a List functionConfig needs items")
		}
		resources, _ = items.Elements()
	}
	for _, r := range resources {
		if r == nil || r.GetKind() == "" || r.GetName() == "" {
			return fail(rl, "upsert-resource: the functionConfig must be the resource to upsert (with kind and metadata.name), or a List of them")
		}
		if err := upsertOne(rl, r.Copy()); err != nil {
			return err
		}
	}
	return nil
}

// targetPathAnnotation names the file upsert-resource adds a resource to.
const targetPathAnnotation = "config.kubernetes.io/target-path"

func upsertOne(rl *framework.ResourceList, r *yaml.RNode) error {
	target := r.GetAnnotations()[targetPathAnnotation]
	if target != "" {
		if _, err := r.Pipe(yaml.ClearAnnotation(targetPathAnnotation)); err != nil {
			return err
		}
	}
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
	if target != "" {
		for _, a := range []string{kioutil.PathAnnotation, kioutil.LegacyPathAnnotation} {
			if err := r.PipeE(yaml.SetAnnotation(a, target)); err != nil {
				return err
			}
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
