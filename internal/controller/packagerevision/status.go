package packagerevision

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/reconciler"
)

// readyCondition is the controller's own Ready verdict from the facts;
// empty when git decides (a revision git has is Ready=True, Synced).
func readyCondition(s *scope) metav1.Condition {
	if s.deleteErr != nil {
		return metav1.Condition{Status: metav1.ConditionFalse, Reason: porchv1alpha1.DeleteFailedReason, Message: s.deleteErr.Error()}
	}
	return metav1.Condition{}
}

// kstatus is the object's Ready, Reconciling and Stalled for the outcome.
func kstatus(pr *porchv1alpha1.PackageRevision, s *scope, o reconciler.Outcome) []porchv1alpha1.Condition {
	return pkgservice.PorchConditions(reconciler.KstatusConditions(pr.Generation, o, readyCondition(s)))
}

// patchStatus is the one place this controller writes a PackageRevision's
// status: the revision git has, shown with the controller's verdict
// (pkgservice.Service.Show), or the verdict alone when git does not show
// the revision (yet) or the reconcile failed on the way.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope, o reconciler.Outcome) error {
	if s.quiet {
		return nil
	}
	conds := kstatus(s.pr, s, o)
	if s.found && o.Err == nil {
		_, err := r.Service.Show(ctx, s.repoObj, s.store, s.rev, s.pr, pkgservice.ShowOptions{Handled: o.Done(), Kstatus: conds})
		return client.IgnoreNotFound(err)
	}
	_, err := r.Service.WriteStatus(ctx, s.pr, func(pr *porchv1alpha1.PackageRevision) bool {
		return pkgservice.SetConditions(&pr.Status.Conditions, conds...)
	})
	return client.IgnoreNotFound(err)
}
