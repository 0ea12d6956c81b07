// Package crd tests Scion's CRDs against a real kube-apiserver: valid
// objects round-trip with their defaults, and every validation rule the
// schema carries rejects bad objects with a message naming the field.
package crd
