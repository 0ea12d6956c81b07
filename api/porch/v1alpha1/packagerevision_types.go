package v1alpha1

import (
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
)

// Lifecycle is the stage of a package revision.
// +kubebuilder:validation:Enum=Draft;Proposed;Published;DeletionProposed
type Lifecycle string

// The lifecycle stages.
const (
	LifecycleDraft            Lifecycle = "Draft"
	LifecycleProposed         Lifecycle = "Proposed"
	LifecyclePublished        Lifecycle = "Published"
	LifecycleDeletionProposed Lifecycle = "DeletionProposed"
)

// Labels Scion sets on every PackageRevision.
const (
	RepositoryLabel = "porch.kpt.dev/repository"
	PackageLabel    = "porch.kpt.dev/package"
	LifecycleLabel  = "porch.kpt.dev/lifecycle"
	// LatestRevisionLabel is "true" on the latest published revision of a
	// package.
	LatestRevisionLabel = "kpt.dev/latest-revision"
	// ApprovedByAnnotation names who approved a revision; it is recorded
	// as the publisher (status.publishedBy) when the revision is published.
	ApprovedByAnnotation = "porch.kpt.dev/approved-by"
	// AutoLifecycleAnnotation, "true" on a Draft, has Scion propose it as
	// soon as its readiness gates are True, its PackageVariant (if any) is
	// Ready, and it has not changed for AutoProposeSettleAnnotation.
	AutoLifecycleAnnotation = "config.porch.kpt.dev/auto-lifecycle-mgmt"
	// AutoProposeSettleAnnotation is how long (a Go duration, 0 by
	// default) a Draft's content must stay unchanged before it is
	// proposed automatically.
	AutoProposeSettleAnnotation = "config.porch.kpt.dev/auto-propose-settle"
	// ProposedByAnnotation records who proposed a revision: the person
	// (Scion's API server sets it when they propose; what a person sends
	// in it is ignored) or the automation that did.
	ProposedByAnnotation = "porch.kpt.dev/proposed-by"
	// ProposedAtAnnotation records when a revision was proposed (RFC
	// 3339), with ProposedByAnnotation.
	ProposedAtAnnotation = "porch.kpt.dev/proposed-at"
	// PackageRevisionFinalizer keeps a PackageRevision until its revision
	// is removed from git.
	PackageRevisionFinalizer = "porch.kpt.dev/packagerevision"
)

// Reasons of the Ready condition of a PackageRevision.
const (
	// SyncedReason: git has the revision as the spec asks.
	SyncedReason = "Synced"
	// RepositoryNotReadyReason: the Repository is unusable.
	RepositoryNotReadyReason = "RepositoryNotReady"
	// RepositoryNotFoundReason: the Repository object does not exist (or
	// is being deleted); for a Repository itself, its remote does not.
	RepositoryNotFoundReason = "RepositoryNotFound"
	// RepositoryUnavailableReason: the repository's remote did not answer
	// in time (or is left alone for a while after it did not).
	RepositoryUnavailableReason = "RepositoryUnavailable"
	// InvalidReason: the spec asks for something impossible.
	InvalidReason = "Invalid"
	// ReadinessGatesNotMetReason: publishing into a deployment repository
	// waits for readiness gates.
	ReadinessGatesNotMetReason = "ReadinessGatesNotMet"
	// DeleteFailedReason: the revision could not be removed from git.
	DeleteFailedReason = "DeleteFailed"
	// PublishedFirstReason (an event): a request to take a revision back
	// to Draft or Proposed came after git published it; it stays
	// Published.
	PublishedFirstReason = "PublishedFirst"
)

// ControllerConditions are the condition types of a PackageRevision that
// Scion's controllers own (kstatus): never written to git, never set by
// people or other actors. The others are package conditions.
var ControllerConditions = []string{"Ready", "Reconciling", "Stalled"}

// IsControllerCondition says whether a condition type is one of
// ControllerConditions.
func IsControllerCondition(t string) bool { return slices.Contains(ControllerConditions, t) }

// TaskType is the kind of a task.
// +kubebuilder:validation:Enum=init;clone;edit;upgrade
type TaskType string

// The task types.
const (
	TaskTypeInit    TaskType = "init"
	TaskTypeClone   TaskType = "clone"
	TaskTypeEdit    TaskType = "edit"
	TaskTypeUpgrade TaskType = "upgrade"
)

// PackageRevisionSpec is the desired state of a package revision.
// +kubebuilder:validation:XValidation:rule="self.packageName == oldSelf.packageName",message="packageName is immutable"
// +kubebuilder:validation:XValidation:rule="self.repository == oldSelf.repository",message="repository is immutable"
// +kubebuilder:validation:XValidation:rule="self.workspaceName == oldSelf.workspaceName",message="workspaceName is immutable"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.revision) || oldSelf.revision == 0 || self.revision == oldSelf.revision",message="revision is immutable once set"
type PackageRevisionSpec struct {
	// PackageName is the package path inside the repository, such as
	// "team-a/namespace": slash-separated simple names (letters, digits,
	// '.', '_', '-', '@', '+', '=', ','; no empty, '.' or '..' segment),
	// as a PackageVariant's package.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_@+=,-][A-Za-z0-9._@+=,-]*(/[A-Za-z0-9_@+=,-][A-Za-z0-9._@+=,-]*)*$`
	PackageName string `json:"packageName"`

	// Repository is the name of the Repository in this namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Repository string `json:"repository"`

	// WorkspaceName identifies the revision while it is a draft or
	// proposed; it is unique per package.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$`
	WorkspaceName string `json:"workspaceName"`

	// Revision is the published revision number, assigned on publish.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Revision int `json:"revision,omitempty"`

	// Lifecycle is the stage of the revision.
	// +kubebuilder:default=Draft
	// +optional
	Lifecycle Lifecycle `json:"lifecycle,omitempty"`

	// Tasks say how the revision's content is made.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Tasks []Task `json:"tasks,omitempty"`

	// ReadinessGates mirror the Kptfile's info.readinessGates.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	ReadinessGates []kptfilev1.ReadinessGate `json:"readinessGates,omitempty"`
}

// Task is one step that produces a revision's content.
// +kubebuilder:validation:XValidation:rule="self.type != 'clone' || has(self.clone)",message="clone is required for a clone task"
// +kubebuilder:validation:XValidation:rule="self.type != 'edit' || has(self.edit)",message="edit is required for an edit task"
// +kubebuilder:validation:XValidation:rule="self.type != 'upgrade' || has(self.upgrade)",message="upgrade is required for an upgrade task"
// +kubebuilder:validation:XValidation:rule="[has(self.init), has(self.clone), has(self.edit), has(self.upgrade)].filter(x, x).size() <= 1",message="only the field matching the task type may be set"
// +kubebuilder:validation:XValidation:rule="!has(self.init) || self.type == 'init'",message="init may only be set for an init task"
// +kubebuilder:validation:XValidation:rule="!has(self.clone) || self.type == 'clone'",message="clone may only be set for a clone task"
// +kubebuilder:validation:XValidation:rule="!has(self.edit) || self.type == 'edit'",message="edit may only be set for an edit task"
// +kubebuilder:validation:XValidation:rule="!has(self.upgrade) || self.type == 'upgrade'",message="upgrade may only be set for an upgrade task"
type Task struct {
	// Type of the task.
	Type TaskType `json:"type"`
	// +optional
	Init *PackageInitTaskSpec `json:"init,omitempty"`
	// +optional
	Clone *PackageCloneTaskSpec `json:"clone,omitempty"`
	// +optional
	Edit *PackageEditTaskSpec `json:"edit,omitempty"`
	// +optional
	Upgrade *PackageUpgradeTaskSpec `json:"upgrade,omitempty"`
}

// PackageInitTaskSpec creates a new, empty package.
type PackageInitTaskSpec struct {
	// +optional
	Description string `json:"description,omitempty"`
	// +optional
	Keywords []string `json:"keywords,omitempty"`
	// +optional
	Site string `json:"site,omitempty"`
}

// PackageRevisionRef names a PackageRevision in the same namespace.
type PackageRevisionRef struct {
	// Name of the PackageRevision.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// PackageCloneTaskSpec clones another package revision.
type PackageCloneTaskSpec struct {
	// UpstreamRef is the published revision to clone.
	UpstreamRef UpstreamPackage `json:"upstreamRef"`
}

// UpstreamPackage names what a clone task clones: a published revision in
// this namespace, by name (Scion's shape), or as Porch writes it
// (upstreamRef.name, with type and git for a package in any git
// repository).
// +kubebuilder:validation:XValidation:rule="[has(self.name), has(self.upstreamRef), has(self.git)].filter(x, x).size() == 1",message="exactly one of name, upstreamRef and git must be set"
type UpstreamPackage struct {
	// Name of the PackageRevision to clone.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Name string `json:"name,omitempty"`
	// Type is Porch's: git, or oci (not supported).
	// +optional
	Type string `json:"type,omitempty"`
	// UpstreamRef is Porch's way to name the PackageRevision to clone.
	// +optional
	UpstreamRef *PackageRevisionRef `json:"upstreamRef,omitempty"`
	// Git is a package in a git repository no Repository names, read
	// once when the clone is written (Porch's clone from a git URL).
	// +optional
	Git *GitPackage `json:"git,omitempty"`
}

// Revision is the name of the PackageRevision to clone, in either shape.
func (u UpstreamPackage) Revision() string {
	if u.UpstreamRef != nil && u.Name == "" {
		return u.UpstreamRef.Name
	}
	return u.Name
}

// GitPackage is a package in a git repository no Repository names, as
// Porch's clone task names one.
type GitPackage struct {
	// Repo is the repository's URL: https:// or http:// (file:// where
	// the controller allows it).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	Repo string `json:"repo"`
	// Ref is a branch, a tag, a full ref name or a full commit hash on a
	// branch or tag; main when empty.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Ref string `json:"ref,omitempty"`
	// Directory is the package's folder in the repository; the root when
	// empty or "/".
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Directory string `json:"directory,omitempty"`
	// SecretRef names a Secret of git credentials in the revision's
	// namespace (username and password, or bearerToken). Whoever creates
	// the revision must be allowed to read that Secret.
	// +optional
	SecretRef *SecretRef `json:"secretRef,omitempty"`
}

// SecretRef names a Secret in the same namespace. Porch's clients send
// an empty name for none.
type SecretRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// GitDirectory is the folder a GitPackage's directory names, "" for the
// repository's root.
func GitDirectory(dir string) string {
	return strings.Trim(dir, "/")
}

// PackageEditTaskSpec copies a published revision of the same package to a
// new draft.
type PackageEditTaskSpec struct {
	// SourceRef is the published revision to copy.
	SourceRef PackageRevisionRef `json:"sourceRef"`
}

// PackageUpgradeTaskSpec 3-way merges the change from oldUpstream to
// newUpstream into a local revision.
// +kubebuilder:validation:XValidation:rule="has(self.oldUpstream) != has(self.oldUpstreamRef)",message="exactly one of oldUpstream and oldUpstreamRef (Porch's name) must be set"
// +kubebuilder:validation:XValidation:rule="has(self.newUpstream) != has(self.newUpstreamRef)",message="exactly one of newUpstream and newUpstreamRef (Porch's name) must be set"
type PackageUpgradeTaskSpec struct {
	// +optional
	OldUpstream PackageRevisionRef `json:"oldUpstream,omitzero"`
	// +optional
	NewUpstream             PackageRevisionRef `json:"newUpstream,omitzero"`
	LocalPackageRevisionRef PackageRevisionRef `json:"localPackageRevisionRef"`
	// OldUpstreamRef and NewUpstreamRef are Porch's names of OldUpstream
	// and NewUpstream.
	// +optional
	OldUpstreamRef *PackageRevisionRef `json:"oldUpstreamRef,omitempty"`
	// +optional
	NewUpstreamRef *PackageRevisionRef `json:"newUpstreamRef,omitempty"`
	// Strategy of the merge; resource-merge by default.
	// +kubebuilder:default=resource-merge
	// +optional
	Strategy kptfilev1.UpdateStrategy `json:"strategy,omitempty"`
}

// ConditionStatus is True, False or Unknown.
// +kubebuilder:validation:Enum=True;False;Unknown
type ConditionStatus string

// Condition is a package condition. Unlike metav1.Condition, reason and
// transition time are optional, because package conditions are also written
// by people into Kptfiles.
type Condition struct {
	// Type of the condition.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	Type string `json:"type"`
	// Status of the condition.
	Status ConditionStatus `json:"status"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// PackageRevisionStatus is the observed state of a package revision.
type PackageRevisionStatus struct {
	// Conditions mirror the Kptfile's status.conditions, plus Ready set by
	// the controller.
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=128
	// +optional
	Conditions []Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// UpstreamLock is the resolved upstream of the package.
	// +optional
	UpstreamLock *kptfilev1.UpstreamLock `json:"upstreamLock,omitempty"`

	// Commit is the git commit holding this revision.
	// +optional
	Commit string `json:"commit,omitempty"`

	// Lifecycle is the lifecycle git has for the revision, written by the
	// controller. spec.lifecycle is what someone asked for: the two differ
	// while a move waits (an unmet readiness gate, a conflict) or is not
	// carried out yet.
	// +optional
	Lifecycle Lifecycle `json:"lifecycle,omitempty"`

	// PublishedBy is who approved the revision.
	// +optional
	PublishedBy string `json:"publishedBy,omitempty"`

	// PublishTimestamp is when the revision was published.
	// +optional
	PublishTimestamp *metav1.Time `json:"publishTimestamp,omitempty"`

	// Deployment is true when the revision lives in a deployment
	// repository.
	// +optional
	Deployment bool `json:"deployment,omitempty"`
}

// PackageRevision is one revision of a package in a repository.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=scion,shortName=pr
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.spec.lifecycle) || oldSelf.spec.lifecycle != 'Published' || (has(oldSelf.status) && has(oldSelf.status.lifecycle) && oldSelf.status.lifecycle == 'Proposed') || (has(self.spec.lifecycle) && self.spec.lifecycle in ['Published', 'DeletionProposed'])",message="a Published revision can only move to DeletionProposed (an approval git has not carried out yet, status.lifecycle Proposed, can be withdrawn)",fieldPath=".spec.lifecycle"
// +kubebuilder:selectablefield:JSONPath=`.spec.repository`
// +kubebuilder:selectablefield:JSONPath=`.spec.packageName`
// +kubebuilder:selectablefield:JSONPath=`.spec.workspaceName`
// +kubebuilder:selectablefield:JSONPath=`.spec.revision`
// +kubebuilder:selectablefield:JSONPath=`.spec.lifecycle`
// +kubebuilder:printcolumn:name="Package",type=string,JSONPath=`.spec.packageName`
// +kubebuilder:printcolumn:name="Workspace",type=string,JSONPath=`.spec.workspaceName`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.spec.revision`
// +kubebuilder:printcolumn:name="Lifecycle",type=string,JSONPath=`.status.lifecycle`,description="the lifecycle git has"
// +kubebuilder:printcolumn:name="Requested",type=string,JSONPath=`.spec.lifecycle`,priority=1,description="the lifecycle asked for (spec.lifecycle)"
// +kubebuilder:printcolumn:name="Repository",type=string,JSONPath=`.spec.repository`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
type PackageRevision struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec   PackageRevisionSpec   `json:"spec"`
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

// GitLifecycle is the lifecycle git has for the revision
// (status.lifecycle, which the controller writes from git; the lifecycle
// label on objects shown before that field existed), or the spec's before
// the object was first shown. The spec says what someone asked for: a
// publication refused (an unmet gate, a conflict) leaves spec.lifecycle
// Published on a revision git still has as Proposed.
func (pr *PackageRevision) GitLifecycle() Lifecycle {
	if pr.Status.Lifecycle != "" {
		return pr.Status.Lifecycle
	}
	if lc := pr.Labels[LifecycleLabel]; lc != "" {
		return Lifecycle(lc)
	}
	return pr.Spec.Lifecycle
}

// ShownLifecycle is what people are shown of a revision's lifecycle: the
// one git has, and the one requested when it differs, with why it waits
// (the Ready condition's reason and the start of its message), such as
// "Proposed → Published (waiting: PackageConflict: ...)".
func (pr *PackageRevision) ShownLifecycle() string { return pr.shownLifecycle(true) }

// ShortLifecycle is ShownLifecycle with the reason it waits but not the
// message, such as "Proposed → Published (waiting: PackageConflict)": a
// table's column, whose width one long message would set for every row.
func (pr *PackageRevision) ShortLifecycle() string { return pr.shownLifecycle(false) }

func (pr *PackageRevision) shownLifecycle(withMessage bool) string {
	have, want := pr.GitLifecycle(), pr.Spec.Lifecycle
	if want == "" {
		want = LifecycleDraft
	}
	if have == "" || have == want {
		return string(want)
	}
	out := string(have) + " → " + string(want)
	for _, c := range pr.Status.Conditions {
		if c.Type != "Ready" || c.Status == ConditionStatus("True") || c.Reason == "" {
			continue
		}
		msg := c.Message
		if !withMessage {
			msg = ""
		}
		if r := []rune(msg); len(r) > 80 {
			msg = strings.TrimRight(string(r[:77]), " ") + "..."
		}
		out += " (waiting: " + c.Reason
		if msg != "" {
			out += ": " + msg
		}
		out += ")"
	}
	return out
}

// RecordProposal records that by proposed pr at at.
func (pr *PackageRevision) RecordProposal(by string, at time.Time) {
	if pr.Annotations == nil {
		pr.Annotations = map[string]string{}
	}
	pr.Annotations[ProposedByAnnotation] = by
	pr.Annotations[ProposedAtAnnotation] = at.UTC().Format(time.RFC3339)
}
