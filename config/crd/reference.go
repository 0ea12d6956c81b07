package crd

import (
	"fmt"
	"io"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// WriteReference writes the Markdown reference of a CRD: every field of
// its storage version with type, description and validation, then
// example (YAML) when given.
func WriteReference(w io.Writer, crd *apiextensionsv1.CustomResourceDefinition, example string) error {
	var v *apiextensionsv1.CustomResourceDefinitionVersion
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Storage {
			v = &crd.Spec.Versions[i]
		}
	}
	if v == nil || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		return fmt.Errorf("%s has no storage version schema", crd.Name)
	}
	var b strings.Builder
	kind := crd.Spec.Names.Kind
	fmt.Fprintf(&b, "# %s\n\n", kind)
	fmt.Fprintf(&b, "Generated from the CRD by `make docs`; do not edit.\n\n")
	fmt.Fprintf(&b, "`%s/%s`, namespaced, short names: %s.\n\n", crd.Spec.Group, v.Name, strings.Join(crd.Spec.Names.ShortNames, ", "))
	root := v.Schema.OpenAPIV3Schema
	if root.Description != "" {
		fmt.Fprintf(&b, "%s\n\n", root.Description)
	}
	if example != "" {
		fmt.Fprintf(&b, "## Example\n\n```yaml\n%s\n```\n\n", strings.TrimRight(example, "\n"))
	}
	b.WriteString("## Fields\n\n| field | type | description |\n|---|---|---|\n")
	for _, top := range []string{"spec", "status"} {
		if s, ok := root.Properties[top]; ok {
			walk(&b, top, &s, contains(root.Required, top))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func walk(b *strings.Builder, path string, s *apiextensionsv1.JSONSchemaProps, required bool) {
	typ := s.Type
	switch {
	case typ == "array" && s.Items != nil && s.Items.Schema != nil:
		typ = "[]" + s.Items.Schema.Type
	case typ == "object" && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		typ = "map[string]" + s.AdditionalProperties.Schema.Type
	case s.XIntOrString:
		typ = "int or string"
	}
	var notes []string
	if required {
		notes = append(notes, "required")
	}
	if len(s.Enum) > 0 {
		var vals []string
		for _, e := range s.Enum {
			vals = append(vals, "`"+strings.Trim(string(e.Raw), `"`)+"`")
		}
		notes = append(notes, "one of "+strings.Join(vals, ", "))
	}
	if s.Default != nil {
		notes = append(notes, "default `"+strings.Trim(string(s.Default.Raw), `"`)+"`")
	}
	if s.Pattern != "" {
		notes = append(notes, "pattern `"+s.Pattern+"`")
	}
	if s.MaxLength != nil {
		notes = append(notes, fmt.Sprintf("at most %d characters", *s.MaxLength))
	}
	if s.MaxItems != nil {
		notes = append(notes, fmt.Sprintf("at most %d items", *s.MaxItems))
	}
	rules := s.XValidations
	if s.Type == "array" && s.Items != nil && s.Items.Schema != nil {
		rules = append(rules, s.Items.Schema.XValidations...)
	}
	for _, x := range rules {
		notes = append(notes, "rule: "+x.Message)
	}
	desc := strings.Join(strings.Fields(s.Description), " ")
	if len(notes) > 0 {
		if desc != "" {
			desc += " "
		}
		desc += "(" + strings.Join(notes, "; ") + ")"
	}
	fmt.Fprintf(b, "| `%s` | %s | %s |\n", path, typ, strings.ReplaceAll(desc, "|", "\\|"))
	props := s.Properties
	child := path
	if s.Type == "array" && s.Items != nil && s.Items.Schema != nil {
		props = s.Items.Schema.Properties
		child = path + "[]"
		s = s.Items.Schema
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := props[n]
		walk(b, child+"."+n, &p, contains(s.Required, n))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
