package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types shared by the kinds of this group. They follow kstatus, so
// `kubectl wait --for=condition=Ready` works.
const (
	// ReadyCondition is True when the object's desired state is reached.
	ReadyCondition = "Ready"
	// ReconcilingCondition is True while the controller is working towards
	// the desired state.
	ReconcilingCondition = "Reconciling"
	// StalledCondition is True when the controller cannot make progress
	// without a change to the object or its environment.
	StalledCondition = "Stalled"
	// NoTargetsCondition is True while the object is Ready with nothing
	// to do because what it selects is empty (a set's target, a rollout's
	// revisionSelector); its message says which.
	NoTargetsCondition = "NoTargets"
	// NoTargetsReason is the reason of NoTargets=True.
	NoTargetsReason = "NoTargets"
)

// Reasons of the kstatus conditions that do not come from a controller's
// steps, and the reason of a spec that fails validation, shared by every
// kind.
const (
	// DoneReason: Reconciling=False, Stalled=False after a complete
	// reconcile.
	DoneReason = "Done"
	// RetryingReason: a transient failure, retried with backoff
	// (Reconciling=True, Ready=Unknown).
	RetryingReason = "Retrying"
	// StalledReason: Reconciling=False because the object is stalled.
	StalledReason = "Stalled"
	// ValidationErrorReason: the spec has a value the controller cannot
	// use; the message names the field.
	ValidationErrorReason = "ValidationError"
	// ValidReason: Valid=True, the spec is usable.
	ValidReason = "Valid"
)

// ReadyAt reports whether conditions say Ready=True of the object's
// current generation: a status written for an older spec (observed
// below generation) does not count, whatever it says.
func ReadyAt(conditions []metav1.Condition, generation, observed int64) bool {
	return observed == generation && meta.IsStatusConditionTrue(conditions, ReadyCondition)
}

// ShardLabel assigns an object to the controller replica started with
// --shard set to its value; replicas without --shard reconcile the objects
// without it. PackageRevisions take their Repository's, PackageVariants a
// PackageVariantSet generates take the set's.
const ShardLabel = "config.porch.kpt.dev/shard"
