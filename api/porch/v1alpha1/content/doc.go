// Package content holds the porch.kpt.dev/v1alpha1 types Scion's API
// server serves from git rather than from CustomResourceDefinitions:
// PackageRevisionResources, a package revision's files.
//
// +kubebuilder:object:generate=true
// +kubebuilder:skip
package content
