package apiserver

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/api/porch/v1alpha1/content"
	"github.com/scion-dev/scion/config/crd"
)

var (
	// apiScheme holds the types the server serves, in porch.kpt.dev.
	apiScheme = runtime.NewScheme()
	// apiCodecs encodes and decodes them.
	apiCodecs = serializer.NewCodecFactory(apiScheme)

	// storageScheme holds PackageRevision in Scion's storage group.
	storageScheme = runtime.NewScheme()
	// storageCodecs encodes and decodes the storage's objects.
	storageCodecs = serializer.NewCodecFactory(storageScheme)
)

// selectableFields are the field selectors packagerevisions accept: the
// metadata's and those the storage's CustomResourceDefinition declares.
func selectableFields() map[string]bool {
	out := map[string]bool{"metadata.name": true, "metadata.namespace": true}
	def, err := crd.StorageDefinition()
	utilruntime.Must(err)
	for _, v := range def.Spec.Versions {
		for _, f := range v.SelectableFields {
			out[strings.TrimPrefix(f.JSONPath, ".")] = true
		}
	}
	return out
}

func init() {
	utilruntime.Must(porchv1alpha1.AddToScheme(apiScheme))
	utilruntime.Must(content.AddToScheme(apiScheme))
	// The generic server converts through an internal version; the types
	// are the same Go types, so conversion only sets the kind.
	internal := schema.GroupVersion{Group: porchv1alpha1.GroupVersion.Group, Version: runtime.APIVersionInternal}
	apiScheme.AddKnownTypes(internal,
		&porchv1alpha1.PackageRevision{}, &porchv1alpha1.PackageRevisionList{},
		&content.PackageRevisionResources{}, &content.PackageRevisionResourcesList{})
	unversioned := schema.GroupVersion{Version: "v1"}
	metav1.AddToGroupVersion(apiScheme, unversioned)
	apiScheme.AddUnversionedTypes(unversioned, &metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	for _, kind := range []string{"PackageRevision", "PackageRevisionResources"} {
		fields := selectableFields()
		if kind == "PackageRevisionResources" {
			fields = map[string]bool{"metadata.name": true, "metadata.namespace": true}
		}
		utilruntime.Must(apiScheme.AddFieldLabelConversionFunc(porchv1alpha1.GroupVersion.WithKind(kind), func(label, value string) (string, string, error) {
			if !fields[label] {
				return "", "", fmt.Errorf("field label not supported: %s", label)
			}
			return label, value, nil
		}))
	}

	utilruntime.Must(porchv1alpha1.AddToStorageScheme(storageScheme))
}
