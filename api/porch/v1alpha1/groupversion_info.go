// Package v1alpha1 contains the porch.kpt.dev/v1alpha1 API: PackageRevision.
//
// +kubebuilder:object:generate=true
// +groupName=porch.kpt.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "porch.kpt.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this API with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// StorageGroupVersion is the group of Scion's own storage of package
// revisions: the controllers keep PackageRevisions in a
// CustomResourceDefinition of this group, and Scion's API server serves
// them, with their content, as porch.kpt.dev/v1alpha1 (a group-version is
// served either by CustomResourceDefinitions or by one aggregated API
// server, and PackageRevisionResources cannot be a CustomResourceDefinition).
var StorageGroupVersion = schema.GroupVersion{Group: "internal.scion.dev", Version: "v1alpha1"}

// AddToStorageScheme registers PackageRevision and PackageRevisionList
// under StorageGroupVersion, for clients of Scion's storage. A scheme has
// one group per Go type: use a scheme of its own.
func AddToStorageScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(StorageGroupVersion, &PackageRevision{}, &PackageRevisionList{})
	metav1.AddToGroupVersion(s, StorageGroupVersion)
	return nil
}
