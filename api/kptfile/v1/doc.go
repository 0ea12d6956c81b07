// Package v1 holds the Go types of the kpt v1 Kptfile (apiVersion kpt.dev/v1,
// kind Kptfile). They are plain data types: reading and writing Kptfiles while
// preserving comments is done by internal/kptfile, which uses these types
// for typed access.
//
// +kubebuilder:object:generate=true
package v1
