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
	porchv1alpha2 "github.com/scion-dev/scion/api/porch/v1alpha2"
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

// selectableFields are the field selectors packagerevisions accept in a
// version: the metadata's and those its schema declares, each mapped to
// the field of the stored (v1alpha1) object it selects on (v1alpha2's
// status.revision is v1alpha1's spec.revision).
func selectableFields(version string) map[string]string {
	out := map[string]string{"metadata.name": "metadata.name", "metadata.namespace": "metadata.namespace"}
	def, err := crd.PorchDefinition()
	utilruntime.Must(err)
	for _, v := range def.Spec.Versions {
		if v.Name != version {
			continue
		}
		for _, f := range v.SelectableFields {
			label := strings.TrimPrefix(f.JSONPath, ".")
			out[label] = label
		}
	}
	if version == porchv1alpha2.GroupVersion.Version {
		out["status.revision"] = "spec.revision"
	}
	return out
}

func init() {
	utilruntime.Must(porchv1alpha1.AddToScheme(apiScheme))
	utilruntime.Must(content.AddToScheme(apiScheme))
	utilruntime.Must(porchv1alpha2.AddToScheme(apiScheme))
	utilruntime.Must(porchv1alpha2.RegisterConversions(apiScheme))
	// v1alpha1 is the preferred version (kubectl get packagerevisions).
	utilruntime.Must(apiScheme.SetVersionPriority(porchv1alpha1.GroupVersion, porchv1alpha2.GroupVersion))
	// The generic server converts through an internal version; the types
	// are v1alpha1's Go types, so converting v1alpha1 only sets the kind,
	// and v1alpha2 converts with porchv1alpha2.RegisterConversions.
	internal := schema.GroupVersion{Group: porchv1alpha1.GroupVersion.Group, Version: runtime.APIVersionInternal}
	apiScheme.AddKnownTypes(internal,
		&porchv1alpha1.PackageRevision{}, &porchv1alpha1.PackageRevisionList{},
		&content.PackageRevisionResources{}, &content.PackageRevisionResourcesList{})
	unversioned := schema.GroupVersion{Version: "v1"}
	metav1.AddToGroupVersion(apiScheme, unversioned)
	apiScheme.AddUnversionedTypes(unversioned, &metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	for _, k := range []struct {
		gvk    schema.GroupVersionKind
		fields map[string]string
	}{
		{porchv1alpha1.GroupVersion.WithKind("PackageRevision"), selectableFields(porchv1alpha1.GroupVersion.Version)},
		{porchv1alpha2.GroupVersion.WithKind("PackageRevision"), selectableFields(porchv1alpha2.GroupVersion.Version)},
		{porchv1alpha1.GroupVersion.WithKind("PackageRevisionResources"), map[string]string{"metadata.name": "metadata.name", "metadata.namespace": "metadata.namespace"}},
	} {
		utilruntime.Must(apiScheme.AddFieldLabelConversionFunc(k.gvk, func(label, value string) (string, string, error) {
			to, ok := k.fields[label]
			if !ok {
				return "", "", fmt.Errorf("field label not supported: %s", label)
			}
			return to, value, nil
		}))
	}

	utilruntime.Must(porchv1alpha1.AddToStorageScheme(storageScheme))
}
