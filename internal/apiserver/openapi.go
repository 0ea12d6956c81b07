package apiserver

import (
	"encoding/json"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	extensionsopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/api/porch/v1alpha1/content"
	"github.com/scion-dev/scion/config/crd"
)

// openAPIDefinitions describes the served types for OpenAPI (kubectl
// explain, server-side apply): PackageRevision with the storage's schema
// (one schema, the CustomResourceDefinition's), PackageRevisionResources
// by hand, and the meta types from the Kubernetes libraries.
func openAPIDefinitions() (common.GetOpenAPIDefinitions, error) {
	def, err := crd.StorageDefinition()
	if err != nil {
		return nil, err
	}
	var props *apiextensionsv1.JSONSchemaProps
	for _, v := range def.Spec.Versions {
		if v.Name == porchv1alpha1.GroupVersion.Version && v.Schema != nil {
			props = v.Schema.OpenAPIV3Schema
		}
	}
	if props == nil {
		return nil, fmt.Errorf("the storage's CustomResourceDefinition has no schema for %s", porchv1alpha1.GroupVersion.Version)
	}
	data, err := json.Marshal(props)
	if err != nil {
		return nil, err
	}
	return func(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
		out := extensionsopenapi.GetOpenAPIDefinitions(ref)
		objectMeta, listMeta := metav1.ObjectMeta{}.OpenAPIModelName(), metav1.ListMeta{}.OpenAPIModelName()
		var pr spec.Schema
		if err := json.Unmarshal(data, &pr); err != nil {
			panic(fmt.Sprintf("the storage's schema: %v", err)) // read above from the same bytes
		}
		pr.Properties["metadata"] = spec.Schema{SchemaProps: spec.SchemaProps{Ref: ref(objectMeta)}}
		prName := util.GetCanonicalTypeName(&porchv1alpha1.PackageRevision{})
		prrName := util.GetCanonicalTypeName(&content.PackageRevisionResources{})
		out[prName] = common.OpenAPIDefinition{Schema: pr, Dependencies: []string{objectMeta}}
		out[util.GetCanonicalTypeName(&porchv1alpha1.PackageRevisionList{})] = list(ref, prName, listMeta)
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
