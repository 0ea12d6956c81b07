package reconciler

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/store"
)

// KstatusConditions returns Ready, Reconciling and Stalled for an
// outcome, all observing gen, with the polarity kstatus expects:
//
//   - done: Ready is ready (the controller's verdict from its facts),
//     Reconciling=False, Stalled=False;
//   - stalled: Stalled=True and Ready=False with its reason, Reconciling=False;
//   - waiting: Reconciling=True and Ready=False with its reason;
//   - transient failure: Reconciling=True and Ready=Unknown, reason
//     Retrying, unless ready says False with the controller's own reason.
//
// A ready condition whose Status is empty is left out (the controller
// does not know yet).
func KstatusConditions(gen int64, o Outcome, ready metav1.Condition) []metav1.Condition {
	ready.Type = configv1alpha1.ReadyCondition
	reconciling := metav1.Condition{Type: configv1alpha1.ReconcilingCondition, Status: metav1.ConditionFalse, Reason: configv1alpha1.DoneReason}
	stalled := metav1.Condition{Type: configv1alpha1.StalledCondition, Status: metav1.ConditionFalse, Reason: configv1alpha1.DoneReason}
	switch {
	case o.Stalled != nil:
		stalled = metav1.Condition{Type: configv1alpha1.StalledCondition, Status: metav1.ConditionTrue, Reason: o.Stalled.Reason, Message: o.Stalled.Message}
		reconciling.Reason = configv1alpha1.StalledReason
		ready = metav1.Condition{Type: configv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: o.Stalled.Reason, Message: o.Stalled.Message}
	case o.Waiting != nil:
		reconciling = metav1.Condition{Type: configv1alpha1.ReconcilingCondition, Status: metav1.ConditionTrue, Reason: o.Waiting.Reason, Message: o.Waiting.Message}
		ready = metav1.Condition{Type: configv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: o.Waiting.Reason, Message: o.Waiting.Message}
	case o.Err != nil:
		reconciling = metav1.Condition{Type: configv1alpha1.ReconcilingCondition, Status: metav1.ConditionTrue, Reason: configv1alpha1.RetryingReason, Message: o.Err.Error()}
		if ready.Status == "" || ready.Status == metav1.ConditionTrue {
			ready = metav1.Condition{Type: configv1alpha1.ReadyCondition, Status: metav1.ConditionUnknown, Reason: configv1alpha1.RetryingReason, Message: o.Err.Error()}
		}
	}
	out := []metav1.Condition{reconciling, stalled}
	if ready.Status != "" {
		out = append(out, ready)
	}
	for i := range out {
		out[i].ObservedGeneration = gen
	}
	return out
}

// SetConditions sets each condition on conds (keeping the transition
// time of a condition whose status did not change), observing gen. A type
// it sets appears once afterwards: Scion's kinds declare conditions atomic
// lists, so the API server no longer refuses a type twice (a list keyed by
// type did), and a status written by someone else (an administrator's
// patch) may hold one; readers would see two Ready conditions until the
// controller's next write.
func SetConditions(conds *[]metav1.Condition, gen int64, cs ...metav1.Condition) {
	for _, c := range cs {
		c.ObservedGeneration = gen
		c.Message = store.Shorten(c.Message, MaxMessage)
		meta.SetStatusCondition(conds, c)
		seen := false
		*conds = slices.DeleteFunc(*conds, func(have metav1.Condition) bool {
			if have.Type != c.Type {
				return false
			}
			repeat := seen
			seen = true
			return repeat
		})
	}
}

// MaxMessage bounds a condition's message (the API server refuses one over
// 32 KiB, and the whole status with it): a message may quote a user's value
// or a remote's words.
const MaxMessage = 4096

// Transition returns the Ready condition of after when it differs (in
// status or reason) from before's: what an event should announce. It
// returns nil otherwise.
func Transition(before, after []metav1.Condition) *metav1.Condition {
	old := meta.FindStatusCondition(before, configv1alpha1.ReadyCondition)
	cur := meta.FindStatusCondition(after, configv1alpha1.ReadyCondition)
	if cur == nil || (old != nil && old.Status == cur.Status && old.Reason == cur.Reason) {
		return nil
	}
	return cur
}
