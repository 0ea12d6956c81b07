package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LockedState says where a locked package is.
type LockedState string

// Locked states.
const (
	// LockedPublished: a revision of the package is Published in the
	// repository (the lock shows the newest).
	LockedPublished LockedState = "Published"
	// LockedDraft: the package is in the repository only as a draft or a
	// proposal, or its draft moves it to another version.
	LockedDraft LockedState = "Draft"
	// LockedPlanned: a PackageVariant's resolution is installing it; git
	// does not have it yet.
	LockedPlanned LockedState = "Planned"
)

// LockedPackage is one package of a deployment repository.
type LockedPackage struct {
	// Name is the package's path in its upstream repository (or its folder
	// in this repository when it records no upstream).
	Name string `json:"name"`
	// Version is its version ("" when it records none).
	// +optional
	Version string `json:"version,omitempty"`
	// Directory is the package's folder in this repository ("" while
	// planned).
	// +optional
	Directory string `json:"directory,omitempty"`
	// State is Published, Draft or Planned.
	State LockedState `json:"state"`
	// Provides are the kinds (apiVersion/kind) the package provides.
	// +optional
	Provides []string `json:"provides,omitempty"`
	// Dependants are the packages in this repository that require it.
	// +optional
	Dependants []string `json:"dependants,omitempty"`
	// PlannedBy names the PackageVariants whose resolution installs it
	// (state Planned).
	// +optional
	PlannedBy []string `json:"plannedBy,omitempty"`
}

// LockConflict is something the repository cannot hold at once: a kind
// two packages provide (Kind), or a package that allows one version per
// repository at two versions (Package).
type LockConflict struct {
	// Kind is apiVersion/kind, for a kind with two providers.
	// +optional
	Kind string `json:"kind,omitempty"`
	// Package is the package, for a package at two versions.
	// +optional
	Package string `json:"package,omitempty"`
	// Packages are, for a kind, its providers: the first holds the kind
	// (Published first, then the first planned or drafted); the others'
	// publication is refused while the conflict stands. For a package,
	// the folders holding it, the first holding the version that stays.
	Packages []string `json:"packages"`
	// RequiredBy are the packages of the repository that cannot be
	// installed because of the conflict: they require a provider of the
	// kind that is not its holder.
	// +optional
	RequiredBy []string `json:"requiredBy,omitempty"`
	// Message says it as a person reads it.
	Message string `json:"message"`
}

// PackageLock is the lock of one deployment Repository (of the same
// name): every package in it, its version, the kinds it provides and its
// dependants, and the kinds two packages provide. The Repository
// controller keeps it from git; PackageVariants resolving dependencies add
// the packages they are installing. Every write is optimistic (against the
// resourceVersion read), so two resolutions in one repository cannot both
// claim a kind.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=scion,shortName=plock
// +kubebuilder:printcolumn:name="Packages",type=integer,JSONPath=`.summary.packages`
// +kubebuilder:printcolumn:name="Conflicts",type=integer,JSONPath=`.summary.conflicts`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PackageLock struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Packages are the repository's packages, by name then directory.
	// +optional
	Packages []LockedPackage `json:"packages,omitempty"`
	// Conflicts are kinds with more than one provider.
	// +optional
	Conflicts []LockConflict `json:"conflicts,omitempty"`
	// Summary counts packages and conflicts, for kubectl get.
	// +optional
	Summary LockSummary `json:"summary,omitempty"`
}

// LockSummary counts a lock's packages and conflicts.
type LockSummary struct {
	Packages  int `json:"packages"`
	Conflicts int `json:"conflicts"`
}

// PackageLockList is a list of PackageLocks.
//
// +kubebuilder:object:root=true
type PackageLockList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PackageLock `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PackageLock{}, &PackageLockList{})
}
