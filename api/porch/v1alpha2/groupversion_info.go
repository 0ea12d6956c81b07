// Package v1alpha2 contains the porch.kpt.dev/v1alpha2 API: Porch's next
// PackageRevision, with spec.source instead of tasks, the revision in the
// status, and package conditions apart from the controller's. Scion's API
// server serves it beside v1alpha1 over the same stored revisions; this
// package converts between the two (conversion.go).
//
// +kubebuilder:object:generate=true
// +groupName=porch.kpt.dev
package v1alpha2

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of this API.
	GroupVersion = schema.GroupVersion{Group: "porch.kpt.dev", Version: "v1alpha2"}

	// SchemeBuilder registers the types of this API with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this API to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
