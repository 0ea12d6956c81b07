package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

// PackageRevisionSpec is the desired state of a package revision.
type PackageRevisionSpec struct {
	// PackageName is the package path inside the repository.
	// +optional
	PackageName string `json:"packageName,omitempty"`
	// RepositoryName is the Repository holding the package.
	// +optional
	RepositoryName string `json:"repository,omitempty"`
	// WorkspaceName names the change this revision holds, unique in its
	// package.
	// +optional
	WorkspaceName string `json:"workspaceName,omitempty"`
	// Lifecycle is the stage asked for.
	// +optional
	Lifecycle porchv1alpha1.Lifecycle `json:"lifecycle,omitempty"`
	// Source says how the revision was made: exactly one of its fields
	// when it is created; none for a revision found in git. It cannot
	// change afterwards.
	// +optional
	Source *PackageSource `json:"source,omitempty"`
	// ReadinessGates are the package conditions that must be True before
	// the revision is published into a deployment repository.
	// +optional
	ReadinessGates []kptfilev1.ReadinessGate `json:"readinessGates,omitempty"`
	// PackageMetadata is Porch's labels and annotations for the
	// package's resources; Scion does not support it, and refuses it when
	// set.
	// +optional
	PackageMetadata *PackageMetadata `json:"packageMetadata,omitempty"`
}

// PackageMetadata holds labels and annotations for a package.
type PackageMetadata struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// PackageSource is how a revision was made: one field is set.
type PackageSource struct {
	// Init makes a new, empty package.
	// +optional
	Init *PackageInitSpec `json:"init,omitempty"`
	// CloneFrom makes a new package from an upstream: a published
	// revision, or a package in a git repository.
	// +optional
	CloneFrom *UpstreamPackage `json:"cloneFrom,omitempty"`
	// CopyFrom makes the next revision of a package from a published
	// one of the same package.
	// +optional
	CopyFrom *PackageRevisionRef `json:"copyFrom,omitempty"`
	// Upgrade merges the change between two upstream revisions into a
	// local one.
	// +optional
	Upgrade *PackageUpgradeSpec `json:"upgrade,omitempty"`
}

// PackageInitSpec describes a new package.
type PackageInitSpec struct {
	// Subpackage is Porch's folder of a subpackage to make; Scion makes
	// the package itself only, and refuses it when set.
	// +optional
	Subpackage string `json:"subpackage,omitempty"`
	// +optional
	Description string `json:"description,omitempty"`
	// +optional
	Keywords []string `json:"keywords,omitempty"`
	// +optional
	Site string `json:"site,omitempty"`
}

// UpstreamPackage is what a clone copies.
type UpstreamPackage struct {
	// Type is git when Git is set.
	// +optional
	Type string `json:"type,omitempty"`
	// Git is a package in a git repository no Repository names.
	// +optional
	Git *GitPackage `json:"git,omitempty"`
	// UpstreamRef names a published revision of the namespace.
	// +optional
	UpstreamRef *PackageRevisionRef `json:"upstreamRef,omitempty"`
}

// GitPackage is a package in a git repository.
type GitPackage struct {
	// Repo is the repository's URL.
	Repo string `json:"repo"`
	// Ref is a branch, a tag or a commit.
	// +optional
	Ref string `json:"ref"`
	// Directory is the package's folder ("/" or empty: the root).
	// +optional
	Directory string `json:"directory"`
	// SecretRef names a Secret of git credentials in the namespace (an
	// empty name: none).
	// +optional
	SecretRef PackageRevisionRef `json:"secretRef,omitzero"`
}

// PackageRevisionRef names an object of the same namespace.
type PackageRevisionRef struct {
	// Name of the object.
	Name string `json:"name"`
}

// PackageUpgradeSpec merges the change from OldUpstream to NewUpstream
// into CurrentPackage.
type PackageUpgradeSpec struct {
	// +optional
	OldUpstream PackageRevisionRef `json:"oldUpstream,omitzero"`
	// +optional
	NewUpstream PackageRevisionRef `json:"newUpstream,omitzero"`
	// +optional
	CurrentPackage PackageRevisionRef `json:"currentPackage,omitzero"`
	// Strategy of the merge; resource-merge when empty.
	// +optional
	Strategy kptfilev1.UpdateStrategy `json:"strategy,omitempty"`
}

// PackageCondition is a condition of the package: set in its Kptfile (by
// functions or people) or on the revision, and what readiness gates
// wait for.
type PackageCondition struct {
	Type   string                        `json:"type"`
	Status porchv1alpha1.ConditionStatus `json:"status"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// PackageRevisionStatus is the observed state of a package revision.
type PackageRevisionStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Revision is the number publication gave the revision (0 before).
	// +optional
	Revision int `json:"revision,omitempty"`
	// UpstreamLock is the resolved upstream of the package.
	// +optional
	UpstreamLock *kptfilev1.UpstreamLock `json:"upstreamLock,omitempty"`
	// PublishedBy is who approved the revision.
	// +optional
	PublishedBy string `json:"publishedBy,omitempty"`
	// PublishedAt is when it was published.
	// +optional
	PublishedAt *metav1.Time `json:"publishedAt,omitempty"`
	// Deployment is true in a deployment repository.
	// +optional
	Deployment bool `json:"deployment,omitempty"`
	// CreationSource is how the revision was made: init, clone, copy or
	// upgrade (empty for one found in git).
	// +optional
	CreationSource string `json:"creationSource,omitempty"`
	// PackageConditions are the package's conditions, which readiness
	// gates wait for.
	// +optional
	PackageConditions []PackageCondition `json:"packageConditions,omitempty"`
	// Conditions are the controller's: Ready, Reconciling, Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PackageRevision is one revision of a package in a repository, in
// Porch's v1alpha2 shape.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=scion,shortName=pr
// +kubebuilder:selectablefield:JSONPath=`.spec.repository`
// +kubebuilder:selectablefield:JSONPath=`.spec.packageName`
// +kubebuilder:selectablefield:JSONPath=`.spec.workspaceName`
// +kubebuilder:selectablefield:JSONPath=`.status.revision`
// +kubebuilder:selectablefield:JSONPath=`.spec.lifecycle`
// +kubebuilder:printcolumn:name="Package",type=string,JSONPath=`.spec.packageName`
// +kubebuilder:printcolumn:name="Workspace",type=string,JSONPath=`.spec.workspaceName`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Lifecycle",type=string,JSONPath=`.spec.lifecycle`
// +kubebuilder:printcolumn:name="Repository",type=string,JSONPath=`.spec.repository`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
type PackageRevision struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec   PackageRevisionSpec   `json:"spec,omitempty"`
	Status PackageRevisionStatus `json:"status,omitempty"`
}

// PackageRevisionList is a list of PackageRevisions.
//
// +kubebuilder:object:root=true
type PackageRevisionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PackageRevision `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PackageRevision{}, &PackageRevisionList{})
}
