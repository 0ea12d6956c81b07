package packagevariant

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgdeps"
	"github.com/scion-dev/scion/internal/reconciler"
)

// variantConditions are the variant's own conditions from the facts:
// what the steps recorded, and DownstreamEnsured=False while the
// variant's revision is Proposed and its changes wait.
func variantConditions(s *scope) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range ensuredAs(s.conditions, s.write.ensured) {
		if c.Type != configv1alpha1.ReadyCondition {
			out = append(out, c)
		}
	}
	if s.write.proposalPending != "" {
		out = append(out, metav1.Condition{Type: configv1alpha1.DownstreamEnsuredCondition, Status: metav1.ConditionFalse, Reason: configv1alpha1.ProposalPendingReason, Message: s.write.proposalPending})
	}
	if s.take.held != "" {
		out = append(out, metav1.Condition{Type: configv1alpha1.UpdateAvailableCondition, Status: metav1.ConditionTrue, Reason: s.take.heldReason, Message: s.take.held})
	}
	if s.show.conflict != "" {
		out = append(out, metav1.Condition{Type: configv1alpha1.PackageConflictCondition, Status: metav1.ConditionTrue, Reason: pkgdeps.PackageConflictReason, Message: s.show.conflict})
	}
	return out
}

// readyCondition is the Ready verdict of a complete reconcile: the
// downstream is ensured (DownstreamEnsured) or says why not. Empty when
// nothing was learned about the downstream.
func readyCondition(conds []metav1.Condition) metav1.Condition {
	var ensured *metav1.Condition
	for i := range conds {
		if conds[i].Type == configv1alpha1.DownstreamEnsuredCondition {
			ensured = &conds[i] // the last one recorded wins
		}
	}
	if ensured == nil {
		return metav1.Condition{}
	}
	if ensured.Status == metav1.ConditionTrue {
		// A draft written for dependencies that only a person can fix
		// (refused for a conflict, missing, unsatisfiable) is not Ready;
		// one waiting for its dependencies' publication is.
		for _, c := range conds {
			if c.Type == configv1alpha1.DependenciesReadyCondition && c.Status == metav1.ConditionFalse && c.Reason != pkgdeps.DependencyPendingReason {
				return metav1.Condition{Status: metav1.ConditionFalse, Reason: c.Reason, Message: "the downstream draft is written, but its dependencies are not ready: " + c.Message}
			}
		}
	}
	return metav1.Condition{Status: ensured.Status, Reason: ensured.Reason, Message: ensured.Message}
}

// notEnsuredYet turns a DownstreamEnsured=True the production recorded
// into Unknown when the reconcile did not complete (the write to git
// failed, or waits): what was produced is not in git yet.
func notEnsuredYet(conds []metav1.Condition, o reconciler.Outcome) []metav1.Condition {
	reason, msg := configv1alpha1.RetryingReason, ""
	switch {
	case o.Waiting != nil:
		reason, msg = o.Waiting.Reason, o.Waiting.Message
	case o.Err != nil:
		msg = o.Err.Error()
	}
	for i, c := range conds {
		if c.Type == configv1alpha1.DownstreamEnsuredCondition && c.Status == metav1.ConditionTrue {
			conds[i].Status, conds[i].Reason = metav1.ConditionUnknown, reason
			conds[i].Message = "the downstream draft is not written yet: " + msg
		}
	}
	return conds
}

// setStatus sets a PackageVariant's status from the facts and the
// outcome: its own conditions, the kstatus conditions, and (for a
// complete reconcile) observedGeneration and the downstream targets.
func setStatus(pv *configv1alpha1.PackageVariant, s *scope, o reconciler.Outcome) {
	gen := pv.Generation
	own := variantConditions(s)
	if !o.Complete() {
		own = notEnsuredYet(own, o)
	}
	reconciler.SetConditions(&pv.Status.Conditions, gen, own...)
	reconciler.SetConditions(&pv.Status.Conditions, gen, reconciler.KstatusConditions(gen, o, readyCondition(own))...)
	if o.Complete() {
		pv.Status.ObservedGeneration = gen
		if s.show.targets != nil {
			pv.Status.DownstreamTargets = s.show.targets
		}
		// Conditions of facts no longer true leave with a complete
		// reconcile.
		if pv.Spec.Dependencies == nil {
			meta.RemoveStatusCondition(&pv.Status.Conditions, configv1alpha1.DependenciesReadyCondition)
			pv.Status.Dependencies = nil
		}
		if s.take.held == "" {
			meta.RemoveStatusCondition(&pv.Status.Conditions, configv1alpha1.UpdateAvailableCondition)
		}
		if s.show.conflict == "" {
			meta.RemoveStatusCondition(&pv.Status.Conditions, configv1alpha1.PackageConflictCondition)
		}
		pv.Status.UpstreamVersion = s.take.version
	}
	if s.deps != nil && s.deps.assessment != nil {
		pv.Status.Dependencies = s.deps.assessment.Status
	} else if s.deps != nil {
		pv.Status.Dependencies = nil
	}
}

// patchStatus is the one place a PackageVariant's status is written; a
// Warning event announces a stall. A status computed for a spec that has
// moved on since (found when the write conflicts and the variant is read
// again) is not written: it would say the new generation is observed, and
// Ready, before anything was done for it; the spec's change brings the
// variant back.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope, o reconciler.Outcome) error {
	if !s.pv.DeletionTimestamp.IsZero() && o.Done() {
		return nil // the finalizer is gone, and so is the variant
	}
	gen := s.pv.Generation
	before := meta.FindStatusCondition(s.pv.Status.Conditions, configv1alpha1.StalledCondition)
	stalledBefore := before != nil && before.Status == metav1.ConditionTrue
	_, err := reconciler.PatchStatus(ctx, r.Status, s.pv, func(pv *configv1alpha1.PackageVariant) (bool, error) {
		if pv.Generation != gen {
			return false, reconciler.ErrStale
		}
		setStatus(pv, s, o)
		return true, nil
	})
	if errors.Is(err, reconciler.ErrStale) {
		return nil
	}
	if err != nil {
		return client.IgnoreNotFound(err)
	}
	if o.Stalled != nil && !stalledBefore {
		r.Recorder.Eventf(s.pv, nil, "Warning", o.Stalled.Reason, "Reconcile", "%s", o.Stalled.Message)
	}
	return nil
}
