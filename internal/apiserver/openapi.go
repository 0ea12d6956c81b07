package apiserver

import (
	"encoding/json"
	"fmt"

	extensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/api/porch/v1alpha1/content"
	porchv1alpha2 "github.com/scion-dev/scion/api/porch/v1alpha2"
	"github.com/scion-dev/scion/config/crd"
)

// openAPIDefinitions describes the served types for OpenAPI (kubectl
// explain, server-side apply): PackageRevision of each version with its
// generated schema (crd.PorchDefinition), PackageRevisionResources
// by hand, and the meta types from the Kubernetes libraries.
func openAPIDefinitions() (common.GetOpenAPIDefinitions, error) {
	def, err := crd.PorchDefinition()
	if err != nil {
		return nil, err
	}
	schemas := map[string][]byte{}
	for _, v := range def.Spec.Versions {
		if v.Schema == nil {
			continue
		}
		data, err := json.Marshal(v.Schema.OpenAPIV3Schema)
		if err != nil {
			return nil, err
		}
		schemas[v.Name] = data
	}
	types := []struct{ item, list any }{
		{&porchv1alpha1.PackageRevision{}, &porchv1alpha1.PackageRevisionList{}},
		{&porchv1alpha2.PackageRevision{}, &porchv1alpha2.PackageRevisionList{}},
	}
	for _, v := range []string{porchv1alpha1.GroupVersion.Version, porchv1alpha2.GroupVersion.Version} {
		if schemas[v] == nil {
			return nil, fmt.Errorf("the porch.kpt.dev PackageRevision definition has no schema for %s", v)
		}
	}
	return func(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
		out := extensionsopenapi.GetOpenAPIDefinitions(ref)
		objectMeta, listMeta := metav1.ObjectMeta{}.OpenAPIModelName(), metav1.ListMeta{}.OpenAPIModelName()
		for i, v := range []string{porchv1alpha1.GroupVersion.Version, porchv1alpha2.GroupVersion.Version} {
			var pr spec.Schema
			if err := json.Unmarshal(schemas[v], &pr); err != nil {
				panic(fmt.Sprintf("the %s schema: %v", v, err)) // marshalled above
			}
			pr.Properties["metadata"] = spec.Schema{SchemaProps: spec.SchemaProps{Ref: ref(objectMeta)}}
			prName := util.GetCanonicalTypeName(types[i].item)
			out[prName] = common.OpenAPIDefinition{Schema: pr, Dependencies: []string{objectMeta}}
			out[util.GetCanonicalTypeName(types[i].list)] = list(ref, prName, listMeta)
		}
		prrName := util.GetCanonicalTypeName(&content.PackageRevisionResources{})
		out[prrName] = common.OpenAPIDefinition{Schema: spec.Schema{SchemaProps: spec.SchemaProps{
			Description: "The files of a package revision, read from and written to git.",
			Type:        []string{"object"},
			Properties: map[string]spec.Schema{
				"apiVersion": *spec.StringProperty(),
				"kind":       *spec.StringProperty(),
				"metadata":   {SchemaProps: spec.SchemaProps{Ref: ref(objectMeta)}},
				"spec": {SchemaProps: spec.SchemaProps{Type: []string{"object"}, Properties: map[string]spec.Schema{
					"packageName":   *spec.StringProperty(),
					"workspaceName": *spec.StringProperty(),
					"revision":      *spec.Int64Property(),
					"repository":    *spec.StringProperty(),
					"resources": {SchemaProps: spec.SchemaProps{Type: []string{"object"}, Description: "path in the package to content",
						AdditionalProperties: &spec.SchemaOrBool{Allows: true, Schema: spec.StringProperty()}}},
				}}},
				"status": {SchemaProps: spec.SchemaProps{Type: []string{"object"}},
					VendorExtensible: spec.VendorExtensible{Extensions: spec.Extensions{"x-kubernetes-preserve-unknown-fields": true}}},
			},
		}}, Dependencies: []string{objectMeta}}
		out[util.GetCanonicalTypeName(&content.PackageRevisionResourcesList{})] = list(ref, prrName, listMeta)
		return out
	}, nil
}

// list is the definition of a list of item.
func list(ref common.ReferenceCallback, item, listMeta string) common.OpenAPIDefinition {
	return common.OpenAPIDefinition{Schema: spec.Schema{SchemaProps: spec.SchemaProps{
		Type:     []string{"object"},
		Required: []string{"items"},
		Properties: map[string]spec.Schema{
			"apiVersion": *spec.StringProperty(),
			"kind":       *spec.StringProperty(),
			"metadata":   {SchemaProps: spec.SchemaProps{Ref: ref(listMeta)}},
			"items":      *spec.ArrayProperty(&spec.Schema{SchemaProps: spec.SchemaProps{Ref: ref(item)}}),
		},
	}}, Dependencies: []string{listMeta, item}}
}
