package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PackageDependenciesKind is the kind of the local-config object in which a
// package declares what it requires and provides.
const PackageDependenciesKind = "PackageDependencies"

// PackageDependencies is a local-config object inside a package (annotated
// config.kubernetes.io/local-config: "true", never deployed) that declares
// the package's dependencies. It is not a resource served by the API
// server: Scion reads it from the package's files.
//
// Its fields are spelled out rather than embedded from metav1 so that no
// CustomResourceDefinition is generated for it.
type PackageDependencies struct {
	// APIVersion is config.porch.kpt.dev/v1alpha1.
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind is PackageDependencies.
	Kind string `json:"kind,omitempty"`
	// Metadata is the object's name and annotations; it must carry
	// config.kubernetes.io/local-config: "true".
	Metadata metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the declaration.
	Spec PackageDependenciesSpec `json:"spec,omitempty"`
}

// InstallationType says how many copies of a package one deployment
// repository may hold.
type InstallationType string

const (
	// OnePerRepository allows at most one version of the package in a
	// deployment repository. It is the default.
	OnePerRepository InstallationType = "onePerRepository"
	// NoRestrictions allows several copies, possibly of different
	// versions, in one deployment repository. A package that provides
	// kinds cannot use it: a kind has one provider per repository.
	NoRestrictions InstallationType = "noRestrictions"
)

// PackageDependenciesSpec is what a package requires and provides.
type PackageDependenciesSpec struct {
	// Requires lists what must be present in the deployment repository
	// for the package to work.
	Requires []Requirement `json:"requires,omitempty"`
	// Provides lists the kinds the package serves, beyond those of the
	// CustomResourceDefinitions it contains (which it always provides).
	Provides []GVK `json:"provides,omitempty"`
	// InstallationType is onePerRepository (the default) or
	// noRestrictions.
	InstallationType InstallationType `json:"installationType,omitempty"`
}

// Requirement is one thing a package needs: exactly one of Package, GVK
// and AnyOf.
type Requirement struct {
	// Package requires another package, by path and semver range.
	Package *PackageRequirement `json:"package,omitempty"`
	// GVK requires a kind, served by whichever package provides it.
	GVK *GVK `json:"gvk,omitempty"`
	// AnyOf is satisfied by the first alternative, in order of
	// preference, that leads to a solution.
	AnyOf []Requirement `json:"anyOf,omitempty"`
	// Optional requirements never install anything; when the package is
	// present for another reason, its version must match.
	Optional bool `json:"optional,omitempty"`
}

// PackageRequirement names a package and the versions that satisfy.
type PackageRequirement struct {
	// Name is the package's path in its repository.
	Name string `json:"name"`
	// Version is a semver range (for example ">=1.2.0 <2.0.0" or "^1.2");
	// empty means any version.
	Version string `json:"version,omitempty"`
}

// GVK names a kind by apiVersion (group/version, or version for the core
// group) and kind.
type GVK struct {
	// APIVersion is group/version, or the version alone for the core
	// group.
	APIVersion string `json:"apiVersion"`
	// Kind is the kind's name.
	Kind string `json:"kind"`
}

// String is apiVersion/kind, for example example.com/v1/Widget.
func (g GVK) String() string { return g.APIVersion + "/" + g.Kind }
