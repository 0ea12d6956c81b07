package repository

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/repocache"
	"github.com/scion-dev/scion/internal/store"
)

// Reasons of the Ready condition of a Repository.
const (
	SyncedReason               = "Synced"
	AuthenticationFailedReason = "AuthenticationFailed"
	RepositoryNotFoundReason   = "RepositoryNotFound"
	BranchNotFoundReason       = "BranchNotFound"
	SecretErrorReason          = "SecretError"
	GitErrorReason             = "GitError"
	SyncFailedReason           = "SyncFailed"
	URLNotAllowedReason        = "URLNotAllowed"
	RemoteUnavailableReason    = "RemoteUnavailable"
)

// CredentialsInURLReason is the reason of the Warning event for a
// Repository whose URL carries credentials.
const CredentialsInURLReason = "CredentialsInURL"

// patchStatus is the one place a Repository's status is written: it turns
// the facts of the reconcile into conditions and fields, and writes them
// only when they changed.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope, reconcileErr error) error {
	if s.busy {
		return reconcileErr
	}
	before := s.repo.DeepCopy()
	st := &s.repo.Status
	setReadyCondition(s.repo, s, reconcileErr)
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: configv1alpha1.ReconcilingCondition, Status: metav1.ConditionFalse, Reason: "Done", ObservedGeneration: s.repo.Generation})
	if s.store != nil && reconcileErr == nil {
		st.ObservedGeneration = s.repo.Generation
		st.Commit = s.store.Head()
		st.PackageCount = s.result.Packages
		st.RevisionCount = s.result.Revisions
		if s.result.Changed() || st.LastSyncTime == nil {
			st.LastSyncTime = &metav1.Time{Time: time.Now().Truncate(time.Second)}
		}
	}
	if s.openErr != nil {
		st.ObservedGeneration = s.repo.Generation
	}
	if equalStatus(before.Status, s.repo.Status) {
		return reconcileErr
	}
	r.recordTransition(before, s.repo)
	if err := r.Status().Patch(ctx, s.repo, client.MergeFrom(before)); err != nil {
		return errors.Join(reconcileErr, client.IgnoreNotFound(err))
	}
	return reconcileErr
}

// setReadyCondition sets Ready from the facts: the open error tells the
// user what to fix, naming the Secret for credential problems.
func setReadyCondition(repo *configv1alpha1.Repository, s *scope, reconcileErr error) {
	c := metav1.Condition{Type: configv1alpha1.ReadyCondition, ObservedGeneration: repo.Generation}
	switch err := s.openErr; {
	case err == nil && reconcileErr == nil:
		c.Status, c.Reason = metav1.ConditionTrue, SyncedReason
		c.Message = fmt.Sprintf("%d package revisions at %s", s.result.Revisions, shortCommit(s.store.Head()))
	case err == nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, SyncFailedReason, reconcileErr.Error()
	case errors.Is(err, store.ErrAuthentication):
		c.Status, c.Reason = metav1.ConditionFalse, AuthenticationFailedReason
		c.Message = err.Error()
		if ref := repo.Spec.Git.SecretRef; ref != nil {
			c.Message = fmt.Sprintf("%s; check the credentials in secret %s/%s", err, repo.Namespace, ref.Name)
		} else {
			c.Message = fmt.Sprintf("%s; the repository needs credentials: set spec.git.secretRef", err)
		}
	case errors.Is(err, store.ErrRepositoryNotFound):
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, RepositoryNotFoundReason, err.Error()
	case errors.Is(err, store.ErrBranchNotFound):
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, BranchNotFoundReason, err.Error()
	case errors.Is(err, repocache.ErrSecret):
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, SecretErrorReason, err.Error()
	case errors.Is(err, repocache.ErrURLNotAllowed):
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, URLNotAllowedReason, err.Error()
	case isUnavailable(err):
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, RemoteUnavailableReason, err.Error()
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, GitErrorReason, err.Error()
	}
	meta.SetStatusCondition(&repo.Status.Conditions, c)
}

// isUnavailable says whether the remote did not answer (or is left alone
// after it did not): no fault of the Repository's settings.
func isUnavailable(err error) bool {
	_, ok := store.RetryAfter(err)
	return ok
}

func shortCommit(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	if h == "" {
		return "an empty branch"
	}
	return h
}

// equalStatus compares statuses ignoring condition transition times (which
// SetStatusCondition only moves on real transitions).
func equalStatus(a, b configv1alpha1.RepositoryStatus) bool {
	if a.ObservedGeneration != b.ObservedGeneration || a.Commit != b.Commit || a.PackageCount != b.PackageCount || a.RevisionCount != b.RevisionCount ||
		!a.LastSyncTime.Equal(b.LastSyncTime) || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for _, ca := range a.Conditions {
		cb := meta.FindStatusCondition(b.Conditions, ca.Type)
		if cb == nil || cb.Status != ca.Status || cb.Reason != ca.Reason || cb.Message != ca.Message || cb.ObservedGeneration != ca.ObservedGeneration {
			return false
		}
	}
	return true
}

// recordTransition emits an event when Ready changes.
func (r *Reconciler) recordTransition(before, after *configv1alpha1.Repository) {
	old := meta.FindStatusCondition(before.Status.Conditions, configv1alpha1.ReadyCondition)
	cur := meta.FindStatusCondition(after.Status.Conditions, configv1alpha1.ReadyCondition)
	if cur == nil || (old != nil && old.Status == cur.Status && old.Reason == cur.Reason) {
		return
	}
	eventType := "Normal"
	if cur.Status != metav1.ConditionTrue {
		eventType = "Warning"
	}
	r.Recorder.Eventf(after, nil, eventType, cur.Reason, "Sync", "%s", cur.Message)
}
