package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RolloutApproval says who starts each wave of a PackageRollout.
// +kubebuilder:validation:Enum=Automatic;Manual
type RolloutApproval string

// Approval policies.
const (
	// RolloutApprovalAutomatic starts each wave once the one before is
	// complete and has soaked.
	RolloutApprovalAutomatic RolloutApproval = "Automatic"
	// RolloutApprovalManual also waits, before each wave, for a person to
	// approve it (spec.approvedWaves; scion rollout approve).
	RolloutApprovalManual RolloutApproval = "Manual"
)

// RemainderWave is the name of the wave that takes the targets left after
// the waves of the spec.
const RemainderWave = "remainder"

// PackageRolloutLabel is set on the PackageRevisions a rollout published,
// with the rollout's name.
const PackageRolloutLabel = "config.porch.kpt.dev/rollout"

// RolloutApprover is who a rollout's publications and rollbacks are
// recorded as approved by (the porch.kpt.dev/approved-by annotation and the
// git tag's tagger).
func RolloutApprover(namespace, name string) string {
	return "scion-rollout/" + namespace + "/" + name
}

// WaveApprovedByAnnotation records, on a PackageRollout, who last
// approved a wave (scion rollout approve sets it; the lifecycle policy
// checks it is the user who approves).
const WaveApprovedByAnnotation = "config.porch.kpt.dev/wave-approved-by"

// HoldUpstreamAnnotation, on a PackageVariant, names an upstream commit
// the variant does not take: a rollout that rolled back a revision made
// from it sets it, so the variant stays on the revision it was made from
// before (the content the rollback restored) instead of proposing the
// rolled-back content again. It holds while the upstream resolves to
// that commit; a newer upstream revision is taken as usual. Remove it to
// take the commit after all.
const HoldUpstreamAnnotation = "config.porch.kpt.dev/hold-upstream"

// WaveApprovalPrefix is the prefix of the annotation that records who
// approved one wave: WaveApprovalPrefix + the wave's name, set once when
// the wave is approved (to the user approving, as the lifecycle policy
// checks) and never changed or removed after.
const WaveApprovalPrefix = "wave-approved-by.config.porch.kpt.dev/"

// WaveApprover returns who approved a wave of a rollout ("" when nobody).
func WaveApprover(ro *PackageRollout, wave string) string {
	return ro.Annotations[WaveApprovalPrefix+wave]
}

// PackageRolloutSpec is the plan of a rollout.
// +kubebuilder:validation:XValidation:rule="!has(self.approvedWaves) || !has(self.waves) || self.approvedWaves.all(w, w == 'remainder' || self.waves.exists(x, x.name == w))",message="every entry must name a wave of spec.waves, or remainder",fieldPath=".approvedWaves"
type PackageRolloutSpec struct {
	// RevisionSelector selects the Proposed PackageRevisions of the
	// namespace to roll out (for example by the label of the
	// PackageVariantSet that made them); the targets are their
	// Repositories. The targets are frozen when the rollout starts.
	// +required
	RevisionSelector metav1.LabelSelector `json:"revisionSelector"`

	// Group releases a group of packages: on each target (a repository)
	// the revisions of one PackageVariantSet's variants are one unit,
	// published all or none once every one of them is Proposed with its
	// readiness gates True, healthy when all are, and rolled back
	// together. The revisions the selector matches must all be of that
	// set. Without it, each revision is a target of its own.
	// +optional
	Group *RolloutGroup `json:"group,omitempty"`

	// Waves, in order. A wave takes, from the targets not in an earlier
	// wave, those its repositorySelector matches, by repository name, up
	// to its size; the targets left after the last wave form a final wave
	// named remainder.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=50
	// +optional
	Waves []RolloutWave `json:"waves,omitempty"`

	// Health says when a published target is healthy on its new revision.
	// Without it, published is enough.
	// +optional
	Health *RolloutHealth `json:"health,omitempty"`

	// MaxUnavailable is how many targets may stay unhealthy past
	// progressDeadline before the rollout stops.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=0
	// +optional
	MaxUnavailable int32 `json:"maxUnavailable,omitempty"`

	// ProgressDeadline is how long a published target may take to become
	// healthy before it counts as failed (10m when not set): a Go
	// duration such as 90s, 10m or 1h30m, at least 1s and at most 8760h.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('8760h')",message="progressDeadline must be from 1s to 8760h"
	// +optional
	ProgressDeadline *metav1.Duration `json:"progressDeadline,omitempty"`

	// SoakTime is how long a complete wave is watched before the next one
	// starts: a Go duration such as 0s, 30s or 1h, at most 8760h.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) <= duration('8760h')",message="soakTime must be at most 8760h"
	// +optional
	SoakTime *metav1.Duration `json:"soakTime,omitempty"`

	// Approval: Automatic, or Manual (each wave waits for approvedWaves).
	// +kubebuilder:default=Automatic
	// +optional
	Approval RolloutApproval `json:"approval,omitempty"`

	// ApprovedWaves names the waves a person approved (Manual approval).
	// Adding to it needs the same permission as approving a revision.
	// +listType=set
	// +kubebuilder:validation:MaxItems=51
	// +optional
	ApprovedWaves []string `json:"approvedWaves,omitempty"`

	// Paused publishes nothing more until it is false again.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// Aborted publishes nothing more, for good; with rollbackOnFailure the
	// targets already published are rolled back.
	// +optional
	Aborted bool `json:"aborted,omitempty"`

	// Retries counts the times a person resumed the rollout after it
	// stopped on a failure (scion rollout resume increments it): any
	// change of the spec resumes a rollout that stopped without rolling
	// back, its failed waves getting a fresh progress deadline.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Retries int32 `json:"retries,omitempty"`

	// RollbackOnFailure: when the rollout fails (or is aborted), each
	// target it published gets a new published revision with the content
	// of the revision published before.
	// +optional
	RollbackOnFailure bool `json:"rollbackOnFailure,omitempty"`
}

// RolloutGroup names the group a rollout releases.
type RolloutGroup struct {
	// PackageVariantSet is the set, in the rollout's namespace, whose
	// variants' revisions are the group: one member per upstream of its
	// spec.upstreams on each target.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	PackageVariantSet string `json:"packageVariantSet"`
}

// RolloutWave is one wave of a rollout.
// +kubebuilder:validation:XValidation:rule="!(has(self.maxTargets) && has(self.percent))",message="a wave has at most one size: maxTargets or percent"
type RolloutWave struct {
	// Name of the wave, unique in the rollout; remainder is reserved.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self != 'remainder'",message="remainder is the name of the wave of the targets left over"
	// +required
	Name string `json:"name"`

	// RepositorySelector selects the targets this wave may take, by their
	// Repository's labels (all when not set).
	// +optional
	RepositorySelector *metav1.LabelSelector `json:"repositorySelector,omitempty"`

	// MaxTargets bounds the wave's size.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxTargets *int32 `json:"maxTargets,omitempty"`

	// Percent bounds the wave's size to a share of all the rollout's
	// targets, rounded up, at least 1.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	Percent *int32 `json:"percent,omitempty"`
}

// RolloutHealth says when a published target is healthy: by a condition
// on its PackageRevision, or by a CEL expression over one in-cluster
// object per target.
// +kubebuilder:validation:XValidation:rule="(has(self.conditionType) ? 1 : 0) + (has(self.expr) ? 1 : 0) + (has(self.engine) ? 1 : 0) == 1",message="set exactly one of conditionType, expr and engine"
// +kubebuilder:validation:XValidation:rule="has(self.expr) == has(self.object)",message="expr and object go together: expr reads the object named by object"
type RolloutHealth struct {
	// Engine judges each target by the GitOps engine that deploys it, in
	// the target's cluster, as its Repository's spec.cluster says: with
	// Flux, the target is healthy when the Kustomization applying its
	// package is Ready, has observed its latest spec, and last applied
	// the published revision (its content, for a git repository; its
	// digest, for an OCI one). A Kustomization with spec.wait (or
	// healthChecks) is Ready only once what it applied is healthy.
	// +optional
	Engine HealthEngine `json:"engine,omitempty"`

	// ConditionType is a condition of the published PackageRevision, set
	// by whatever deploys its repository: the target is healthy when it is
	// True and was set after the revision was published.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +optional
	ConditionType string `json:"conditionType,omitempty"`

	// Object names the in-cluster object, in the rollout's namespace, that
	// says whether a target runs its revision (a Flux Kustomization, a
	// Config Sync RootSync, an Argo CD Application). Its kind must be one
	// the controller may read (--readable-kinds).
	// +optional
	Object *HealthObject `json:"object,omitempty"`

	// Expr is a CEL expression over object (the object, as a map; absent
	// objects make the target unhealthy), revision (name, package,
	// workspace, revision, commit) and repository (name, namespace,
	// labels, annotations): the target is healthy when it is true. Compare
	// with revision.commit, so that an object describing an older revision
	// never counts: object.status.lastAppliedRevision.endsWith(revision.commit).
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Expr string `json:"expr,omitempty"`
}

// HealthEngine is a GitOps engine a rollout reads health from.
// +kubebuilder:validation:Enum=Flux
type HealthEngine string

// Health engines.
const (
	// HealthEngineFlux reads the target cluster's Flux Kustomizations.
	HealthEngineFlux HealthEngine = "Flux"
)

// HealthObject names one in-cluster object per target.
type HealthObject struct {
	// APIVersion of the object (kustomize.toolkit.fluxcd.io/v1).
	// +kubebuilder:validation:MinLength=1
	// +required
	APIVersion string `json:"apiVersion"`
	// Kind of the object (Kustomization).
	// +kubebuilder:validation:MinLength=1
	// +required
	Kind string `json:"kind"`
	// NameExpr is a CEL expression over repository and revision that
	// gives the object's name, such as repository.name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +required
	NameExpr string `json:"nameExpr"`
}

// WaveState is where a wave of a rollout is.
type WaveState string

// Wave states.
const (
	WavePending          WaveState = "Pending"
	WaveAwaitingApproval WaveState = "AwaitingApproval"
	WaveProgressing      WaveState = "Progressing"
	WaveSoaking          WaveState = "Soaking"
	WaveComplete         WaveState = "Complete"
	WaveFailed           WaveState = "Failed"
)

// Condition types and reasons of a PackageRollout.
const (
	// ProgressingCondition is True while the rollout publishes or watches
	// a wave.
	ProgressingCondition = "Progressing"

	RolloutCompleteReason  = "RolloutComplete"
	WaveProgressingReason  = "WaveProgressing"
	WaveSoakingReason      = "WaveSoaking"
	AwaitingApprovalReason = "AwaitingApproval"
	PausedReason           = "Paused"
	AbortedReason          = "Aborted"
	BudgetExceededReason   = "BudgetExceeded"
)

// PackageRolloutStatus is where a rollout is. Its size grows with the
// number of targets only through the frozen membership (revision names).
type PackageRolloutStatus struct {
	// Conditions: Ready (every wave complete), Progressing, Reconciling,
	// Stalled.
	// +listType=atomic
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// StartedAt is when the targets were frozen.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// CurrentWave is the wave the rollout is at.
	// +optional
	CurrentWave string `json:"currentWave,omitempty"`

	// Blocked says what the rollout waits on, when it waits.
	// +optional
	Blocked string `json:"blocked,omitempty"`

	// Waves are the waves and their targets, frozen when the rollout
	// started.
	// +optional
	Waves []WaveStatus `json:"waves,omitempty"`
}

// WaveStatus is one wave of a started rollout.
type WaveStatus struct {
	// Name of the wave.
	Name string `json:"name"`
	// State of the wave.
	State WaveState `json:"state"`
	// Revisions are the names of the PackageRevisions of the wave's
	// targets (frozen).
	// +optional
	Revisions []string `json:"revisions,omitempty"`
	// Groups are, for a rollout of a group (spec.group), the wave's
	// targets with the revisions of each (frozen): what publishes
	// together.
	// +optional
	Groups []TargetGroup `json:"groups,omitempty"`
	// Targets, Published, Healthy, Failed and Dropped count the wave's
	// targets.
	Targets   int32 `json:"targets"`
	Published int32 `json:"published"`
	Healthy   int32 `json:"healthy"`
	Failed    int32 `json:"failed"`
	// Dropped counts revisions that left the rollout (rejected or gone
	// before they were published).
	// +optional
	Dropped int32 `json:"dropped,omitempty"`
	// RolledBack counts targets rolled back.
	// +optional
	RolledBack int32 `json:"rolledBack,omitempty"`
	// StartedAt is when the wave started publishing.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// HealthyAt is when every target was healthy (the soak starts).
	// +optional
	HealthyAt *metav1.Time `json:"healthyAt,omitempty"`
	// ApprovedBy is who approved the wave, for a rollout whose approval
	// is Manual (from its record, the WaveApprovalPrefix annotation).
	// +optional
	ApprovedBy string `json:"approvedBy,omitempty"`
	// ApprovedAt is when the controller first saw the wave's approval
	// (within its queue delay of the approval itself); kept once set.
	// +optional
	ApprovedAt *metav1.Time `json:"approvedAt,omitempty"`
}

// TargetGroup is one target of a group rollout: a repository and the
// revisions of the group there.
type TargetGroup struct {
	Repository string   `json:"repository"`
	Revisions  []string `json:"revisions"`
}

// PackageRollout publishes the Proposed revisions a selector matches
// across their repositories in waves, gated by health, soak time and
// approval, and rolls them back when it fails.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=scion,shortName=prollout
// +kubebuilder:printcolumn:name="Wave",type=string,JSONPath=`.status.currentWave`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Blocked",type=string,JSONPath=`.status.blocked`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PackageRollout struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec PackageRolloutSpec `json:"spec"`

	// Status is where a rollout is. Its size grows with the number of
	// targets only through the frozen membership (revision names). Until
	// the controller's first write it reads observedGeneration -1, so that
	// kstatus-based tools (Flux, kpt, Config Sync) see a new object in
	// progress, not current.
	// +kubebuilder:default:={"observedGeneration":-1}
	Status PackageRolloutStatus `json:"status,omitempty"`
}

// PackageRolloutList is a list of PackageRollouts.
//
// +kubebuilder:object:root=true
type PackageRolloutList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PackageRollout `json:"items"`
}

func init() {
	SchemeBuilder.Register(&PackageRollout{}, &PackageRolloutList{})
}
