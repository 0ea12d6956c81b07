package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
)

// AdoptionPolicy says whether a PackageVariant takes over an existing draft
// it did not create.
// +kubebuilder:validation:Enum=adoptExisting;adoptNone
type AdoptionPolicy string

// DeletionPolicy says what happens to the downstream package revisions when a
// PackageVariant is deleted.
// +kubebuilder:validation:Enum=delete;orphan
type DeletionPolicy string

// Adoption and deletion policies.
const (
	AdoptionPolicyAdoptExisting AdoptionPolicy = "adoptExisting"
	AdoptionPolicyAdoptNone     AdoptionPolicy = "adoptNone"

	DeletionPolicyDelete DeletionPolicy = "delete"
	DeletionPolicyOrphan DeletionPolicy = "orphan"
)

// Well-known names used by PackageVariants.
const (
	// PackageVariantFinalizer keeps a PackageVariant until its downstream
	// package revisions were handled per its deletion policy.
	PackageVariantFinalizer = "config.porch.kpt.dev/packagevariants"
	// PackageVariantReadinessGate is set True on a draft once its
	// PackageVariant has finished mutating it.
	PackageVariantReadinessGate = "config.porch.kpt.dev/packagevariant"
	// InjectionConditionPrefix starts the condition a PackageVariant sets
	// on a draft for each injection point: the prefix, then
	// <Kind>.<name>.
	InjectionConditionPrefix = "config.injection."
	// PackageContextConfigMapName is the name of the package context
	// ConfigMap in a package.
	PackageContextConfigMapName = "kptfile.kpt.dev"
	// PackageVariantLabel, on a PackageRevision, names the PackageVariant
	// that owns it.
	PackageVariantLabel = "config.porch.kpt.dev/packagevariant"
	// DependenciesReadinessGate is the readiness gate on the downstream
	// drafts of a variant with spec.dependencies: True once every
	// dependency is satisfied by revisions Published in the downstream
	// repository.
	DependenciesReadinessGate = "config.porch.kpt.dev/dependencies"
	// DependencyLabel marks a PackageVariant that Scion made to install a
	// dependency; its value is the downstream Repository. Removing it
	// adopts the variant: Scion then never changes nor deletes it.
	DependencyLabel = "config.porch.kpt.dev/dependency-of"
)

// Condition types of a PackageVariant, in addition to Ready, Reconciling and
// Stalled.
const (
	// ValidCondition is False when the spec is invalid.
	ValidCondition = "Valid"
	// DownstreamEnsuredCondition is True when the downstream draft reflects
	// the spec.
	DownstreamEnsuredCondition = "DownstreamEnsured"
	// ContextInjectedCondition reports the package context mutation.
	ContextInjectedCondition = "ContextInjected"
	// ConfigInjectedCondition reports configuration injection.
	ConfigInjectedCondition = "ConfigInjected"
	// DependenciesReadyCondition is True when every dependency of the
	// variant's package is satisfied by revisions Published in the
	// downstream repository (set only with spec.dependencies).
	DependenciesReadyCondition = "DependenciesReady"
	// UpdateAvailableCondition is True when a newer upstream revision in
	// spec.upstream.versionRange is published and updatePolicy is Manual.
	UpdateAvailableCondition = "UpdateAvailable"
	// PackageConflictCondition is True when the variant's downstream
	// package provides a kind another package in the repository provides
	// (from the repository's PackageLock).
	PackageConflictCondition = "PackageConflict"
)

// UpdatePolicy says how a variant whose upstream is a version range moves
// to new upstream revisions.
// +kubebuilder:validation:Enum=Automatic;Manual
type UpdatePolicy string

// Update policies.
const (
	// UpdatePolicyAutomatic drafts the newest published revision in range
	// as soon as it appears.
	UpdatePolicyAutomatic UpdatePolicy = "Automatic"
	// UpdatePolicyManual reports a newer revision in range
	// (UpdateAvailable) and stays.
	UpdatePolicyManual UpdatePolicy = "Manual"
)

// PackageVariantSpec defines a downstream variant of an upstream package.
// +kubebuilder:validation:XValidation:rule="!has(self.upstream) || !has(self.downstream) || self.upstream.repo != self.downstream.repo || self.upstream.__package__ != self.downstream.__package__",message="the downstream package is the upstream package: a package cannot be a variant of itself; name another package or repository in spec.downstream"
type PackageVariantSpec struct {
	// Upstream is the package revision to derive from.
	// +required
	Upstream *Upstream `json:"upstream"`

	// Downstream is where the variant is written.
	// +required
	Downstream *Downstream `json:"downstream"`

	// AdoptionPolicy: adoptNone (default) ignores existing drafts not created
	// by this PackageVariant; adoptExisting takes them over.
	// +kubebuilder:default=adoptNone
	// +optional
	AdoptionPolicy AdoptionPolicy `json:"adoptionPolicy,omitempty"`

	// DeletionPolicy: delete (default) removes drafts and proposes deletion
	// of published revisions when the PackageVariant is deleted; orphan
	// leaves them in place.
	// +kubebuilder:default=delete
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// Labels are set on a downstream PackageRevision when it is created,
	// and never touched again.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations are set on a downstream PackageRevision when it is
	// created, and never touched again.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// PackageContext edits the kptfile.kpt.dev ConfigMap of the downstream.
	// +optional
	PackageContext *PackageContext `json:"packageContext,omitempty"`

	// Pipeline lists functions prepended to the downstream Kptfile
	// pipeline.
	// +kubebuilder:validation:XValidation:rule="!has(self.mutators) || self.mutators.all(f, !has(f.name) || !f.name.contains('.'))",message="function names must not contain '.'"
	// +kubebuilder:validation:XValidation:rule="!has(self.validators) || self.validators.all(f, !has(f.name) || !f.name.contains('.'))",message="function names must not contain '.'"
	// +optional
	Pipeline *kptfilev1.Pipeline `json:"pipeline,omitempty"`

	// Injectors select in-cluster objects to inject into the package's
	// injection points, tried in order.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Injectors []InjectionSelector `json:"injectors,omitempty"`

	// Dependencies, when set, checks (and with install: true installs)
	// what the variant's package requires in the downstream repository,
	// and gates its drafts on config.porch.kpt.dev/dependencies.
	// +optional
	Dependencies *Dependencies `json:"dependencies,omitempty"`
}

// Dependencies says how a variant's package dependencies are handled.
type Dependencies struct {
	// Install: false (default) only checks that the dependencies are in
	// the downstream repository; true installs each missing one as a
	// PackageVariant into the same repository, shared by every variant
	// that needs it.
	// +optional
	Install bool `json:"install,omitempty"`

	// Overrides replace, by package, the range the packages' declarations
	// ask for.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	// +optional
	Overrides []DependencyOverride `json:"overrides,omitempty"`

	// AllowDowngrade lets a package in the repository move to a lower
	// version.
	// +optional
	AllowDowngrade bool `json:"allowDowngrade,omitempty"`

	// Prerelease lets pre-release versions be chosen where no range names
	// one.
	// +optional
	Prerelease bool `json:"prerelease,omitempty"`
}

// DependencyOverride replaces the range asked for a package.
type DependencyOverride struct {
	// Name is the package's path in its upstream repository.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_@+=,-][A-Za-z0-9._@+=,-]*(/[A-Za-z0-9_@+=,-][A-Za-z0-9._@+=,-]*)*$`
	Name string `json:"name"`
	// Version is a semver range ("" or absent: any version).
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Version string `json:"version,omitempty"`
}

// Upstream names an upstream package revision by exactly one of revision,
// workspace name, floating tag or version range.
// +kubebuilder:validation:XValidation:rule="[has(self.revision), has(self.workspaceName), has(self.tag), has(self.versionRange)].exists_one(x, x)",message="exactly one of revision, workspaceName, tag and versionRange must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.updatePolicy) || has(self.versionRange)",message="updatePolicy applies to versionRange only"
type Upstream struct {
	// Repo is the name of the upstream Repository in this namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Repo string `json:"repo"`

	// Package is the upstream package path: slash-separated simple names.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_@+=,-][A-Za-z0-9._@+=,-]*(/[A-Za-z0-9_@+=,-][A-Za-z0-9._@+=,-]*)*$`
	Package string `json:"package"`

	// Revision is a published revision number: 3, "3" or "v3"; -1 is the
	// latest published revision (as in Porch), followed as new ones are
	// published.
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self == -1 || self >= 0 && self <= 999999999 : string(self).matches('^(v?[0-9]{1,9}|-1)$')",message="must be a revision number from 0 to 999999999, such as 3 or \"v3\", or -1 for the latest published revision"
	// +optional
	Revision RevisionNumber `json:"revision,omitempty"`

	// WorkspaceName selects the upstream revision by workspace name.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	WorkspaceName string `json:"workspaceName,omitempty"`

	// Tag is a floating tag (such as stable) the upstream author moves
	// between published revisions; the variant follows it.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._-]*$`
	// +optional
	Tag string `json:"tag,omitempty"`

	// VersionRange is a semver range: the variant follows the newest
	// published revision in it (a revision's version is its semver
	// floating tag, such as v1.4.0, else its revision number N as N.0.0).
	// +kubebuilder:validation:MaxLength=256
	// +optional
	VersionRange string `json:"versionRange,omitempty"`

	// UpdatePolicy, with versionRange: Automatic (default) drafts the
	// newest revision in range as soon as it is published; Manual stays on
	// the revision the downstream has and reports a newer one in the
	// UpdateAvailable condition.
	// +optional
	UpdatePolicy UpdatePolicy `json:"updatePolicy,omitempty"`
}

// Downstream is the repository and package name of the variant.
type Downstream struct {
	// Repo is the name of the downstream Repository in this namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Repo string `json:"repo"`

	// Package is the downstream package path: slash-separated simple
	// names, inside the repository.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_@+=,-][A-Za-z0-9._@+=,-]*(/[A-Za-z0-9_@+=,-][A-Za-z0-9._@+=,-]*)*$`
	Package string `json:"package"`
}

// PackageContext edits the package context ConfigMap.
// +kubebuilder:validation:XValidation:rule="!has(self.data) || (!('name' in self.data) && !('package-path' in self.data))",message="data keys name and package-path are reserved"
// +kubebuilder:validation:XValidation:rule="!has(self.removeKeys) || (!('name' in self.removeKeys) && !('package-path' in self.removeKeys))",message="removeKeys must not list the reserved keys name and package-path"
type PackageContext struct {
	// Data entries are set in the ConfigMap's data.
	// +kubebuilder:validation:MaxProperties=256
	// +optional
	Data map[string]string `json:"data,omitempty"`

	// RemoveKeys are removed from the ConfigMap's data.
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=253
	// +optional
	RemoveKeys []string `json:"removeKeys,omitempty"`
}

// InjectionSelector selects an in-cluster object by name and, optionally,
// group, version and kind.
type InjectionSelector struct {
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Group *string `json:"group,omitempty"`
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Version *string `json:"version,omitempty"`
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Kind *string `json:"kind,omitempty"`
	// Name of the in-cluster object, in the variant's namespace (no
	// namespace/ prefix: other namespaces are never read).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[^/]+$`
	Name string `json:"name"`
}

// PackageVariantStatus is the observed state of a PackageVariant.
type PackageVariantStatus struct {
	// Conditions: Ready, Reconciling, Stalled, Valid, DownstreamEnsured,
	// ContextInjected, ConfigInjected.
	// +listType=atomic
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// DownstreamTargets are the package revisions this variant manages.
	// +optional
	DownstreamTargets []DownstreamTarget `json:"downstreamTargets,omitempty"`

	// UpstreamVersion is the version of the upstream revision the variant
	// follows, when its upstream is a versionRange.
	// +optional
	UpstreamVersion string `json:"upstreamVersion,omitempty"`

	// Dependencies are the packages the variant's package needs in the
	// downstream repository (at most 100 are shown), with spec.dependencies.
	// +optional
	Dependencies []DependencyStatus `json:"dependencies,omitempty"`
}

// DependencyState says whether a dependency is satisfied.
type DependencyState string

// Dependency states.
const (
	// DependencySatisfied: Published in the repository at the version
	// chosen.
	DependencySatisfied DependencyState = "Satisfied"
	// DependencyPending: in the repository as a draft or proposal, or
	// being installed: publishing it satisfies it.
	DependencyPending DependencyState = "Pending"
	// DependencyMissing: not in the repository, and not installed by Scion
	// (spec.dependencies.install is false).
	DependencyMissing DependencyState = "Missing"
	// DependencyConflict: in the repository at another version, put there
	// by someone else than Scion's dependency installation.
	DependencyConflict DependencyState = "Conflict"
)

// DependencyStatus is one dependency of a variant's package.
type DependencyStatus struct {
	// Package is the dependency's path in its upstream repository.
	Package string `json:"package"`
	// Version is the version the resolution chose.
	Version string `json:"version"`
	// State is Satisfied, Pending, Missing or Conflict.
	State DependencyState `json:"state"`
	// SatisfiedBy is where it is in the downstream repository:
	// "<package path> (<lifecycle> <version>)".
	// +optional
	SatisfiedBy string `json:"satisfiedBy,omitempty"`
	// InstalledBy is the PackageVariant that installs it, when Scion does.
	// +optional
	InstalledBy string `json:"installedBy,omitempty"`
	// Installed is true when this variant is one of those that had it
	// installed.
	// +optional
	Installed bool `json:"installed,omitempty"`
}

// DownstreamTarget is one downstream package revision of a variant.
type DownstreamTarget struct {
	// Name of the PackageRevision.
	Name string `json:"name"`
	// RenderStatus is the outcome of its last render.
	// +optional
	RenderStatus *kptfilev1.RenderStatus `json:"renderStatus,omitempty"`
}

// PackageVariant keeps a downstream variant of an upstream package.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=scion,shortName=pvar
// +kubebuilder:printcolumn:name="Upstream",type=string,JSONPath=`.spec.upstream.package`
// +kubebuilder:printcolumn:name="Downstream Repo",type=string,JSONPath=`.spec.downstream.repo`
// +kubebuilder:printcolumn:name="Downstream",type=string,JSONPath=`.spec.downstream.package`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PackageVariant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec PackageVariantSpec `json:"spec"`

	// Status is what the controller observed. Until its first write it
	// reads observedGeneration -1, so that kstatus-based tools (Flux, kpt,
	// Config Sync) see a new object in progress, not current.
	// +kubebuilder:default:={"observedGeneration":-1}
	Status PackageVariantStatus `json:"status,omitempty"`
}

// PackageVariantList is a list of PackageVariants.
//
// +kubebuilder:object:root=true
type PackageVariantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PackageVariant `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PackageVariant{}, &PackageVariantList{})
}

// Condition reasons of a PackageVariant (its Ready condition, and
// UpdateAvailable for UpdateAvailableReason and UpstreamHeldReason).
const (
	// UpstreamNotFoundReason: the upstream revision the variant names
	// does not exist.
	UpstreamNotFoundReason = "UpstreamNotFound"
	// DeletingReason: a deleting variant waits for its drafts to leave
	// git.
	DeletingReason = "Deleting"
	// ProposalPendingReason: the variant's revision is Proposed and the
	// variant has changes for it, written once it is published or
	// rejected.
	ProposalPendingReason = "ProposalPending"
	// UpdateAvailableReason: a newer upstream revision is published in
	// the range of a variant with updatePolicy Manual.
	UpdateAvailableReason = "NewerRevisionInRange"
	// UpstreamHeldReason: the upstream revision the variant follows was
	// rolled back by a rollout (the hold-upstream annotation): the variant
	// stays on the revision it was made from before.
	UpstreamHeldReason = "UpstreamHeld"
	// DownstreamOwnedReason: another PackageVariant has the same
	// downstream repository and package; one variant per package, the
	// oldest.
	DownstreamOwnedReason = "DownstreamOwned"
)
