package repository

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/egress"
	"github.com/scion-dev/scion/internal/reconciler"
	"github.com/scion-dev/scion/internal/repocache"
	"github.com/scion-dev/scion/internal/store"
)

// errSync marks a failure to project the revisions as PackageRevisions.
var errSync = errors.New("syncing the PackageRevisions")

// openFailure turns a failure to open or fetch the repository into an
// outcome: a remote that does not answer is waited for; anything else
// stalls the Repository with a reason saying what to fix, looked at again
// after retry.
func openFailure(repo *configv1alpha1.Repository, err error, retry time.Duration) error {
	if after, ok := store.RetryAfter(err); ok {
		return reconciler.Wait(after, configv1alpha1.RemoteUnavailableReason, "%v", err)
	}
	reason, msg := openFailureReason(repo, err)
	stalled := reconciler.Stall(reason, "%s", msg)
	stalled.Retry = retry
	return stalled
}

// openFailureReason names what failed, naming the Secret for credential
// problems.
func openFailureReason(repo *configv1alpha1.Repository, err error) (reason, msg string) {
	switch {
	case errors.Is(err, store.ErrAuthentication) && repo.Spec.OCI != nil:
		if name := repo.Spec.OCI.SecretRef.SecretName(); name != "" {
			return configv1alpha1.AuthenticationFailedReason, fmt.Sprintf("%s; check the credentials in secret %s/%s", err, repo.Namespace, name)
		}
		return configv1alpha1.AuthenticationFailedReason, fmt.Sprintf("%s; the registry needs credentials: set spec.oci.secretRef", err)
	case errors.Is(err, store.ErrAuthentication):
		if repo.Spec.Git != nil && repo.Spec.Git.SecretRef.SecretName() != "" {
			return configv1alpha1.AuthenticationFailedReason, fmt.Sprintf("%s; check the credentials in secret %s/%s", err, repo.Namespace, repo.Spec.Git.SecretRef.SecretName())
		}
		if repo.Spec.Git != nil && store.HasCredentials(repo.Spec.Git.Repo) {
			return configv1alpha1.AuthenticationFailedReason, fmt.Sprintf("%s; fix the credentials in spec.git.repo, or better, move them into a Secret named in spec.git.secretRef", err)
		}
		return configv1alpha1.AuthenticationFailedReason, fmt.Sprintf("%s; the repository needs credentials: set spec.git.secretRef", err)
	case errors.Is(err, store.ErrRepositoryNotFound):
		return porchv1alpha1.RepositoryNotFoundReason, err.Error()
	case errors.Is(err, store.ErrLimit):
		return store.LimitExceededReason, err.Error()
	case errors.Is(err, store.ErrBranchNotFound):
		return configv1alpha1.BranchNotFoundReason, err.Error()
	case errors.Is(err, repocache.ErrSecret):
		return configv1alpha1.SecretErrorReason, err.Error()
	case errors.As(err, new(*egress.DeniedError)):
		return egress.DeniedReason, err.Error()
	case errors.Is(err, repocache.ErrURLNotAllowed):
		return configv1alpha1.URLNotAllowedReason, err.Error()
	case repo.Spec.OCI != nil:
		return configv1alpha1.RegistryErrorReason, err.Error()
	}
	return configv1alpha1.GitErrorReason, err.Error()
}

// readyCondition is Ready from the facts of a reconcile that got past
// opening the repository.
func readyCondition(s *scope, o reconciler.Outcome) metav1.Condition {
	switch {
	case o.Err != nil && errors.Is(o.Err, errSync):
		return metav1.Condition{Status: metav1.ConditionFalse, Reason: configv1alpha1.SyncFailedReason, Message: o.Err.Error()}
	case s.store == nil:
		return metav1.Condition{}
	}
	msg := fmt.Sprintf("%d package revisions at %s", s.result.Revisions, shortCommit(s.store.Head()))
	if w := storeWarnings(s); w != "" {
		msg += warningsSeparator + w
	}
	return metav1.Condition{Status: metav1.ConditionTrue, Reason: configv1alpha1.SyncedReason, Message: msg}
}

// warningsSeparator comes before a Ready message's warnings.
const warningsSeparator = "; "

// storeWarnings says what the store's last read skipped or did not
// expect (another tool's artifacts under an OCI prefix, a published tag
// moved): said, not fatal. It is "" when there is nothing to say.
func storeWarnings(s *scope) string {
	w, ok := s.store.(interface{ Warnings() []string })
	if !ok {
		return ""
	}
	bad := w.Warnings()
	if len(bad) == 0 {
		return ""
	}
	return fmt.Sprintf("%d warning(s): %s", len(bad), store.Shorten(strings.Join(bad, "; "), 1024))
}

// newWarnings is w (a reconcile's storeWarnings) unless the Ready
// condition said it before: warnings are announced when they appear or
// change, not on every sync, and a restarted controller does not
// announce them again.
func newWarnings(before []metav1.Condition, w string) string {
	if c := meta.FindStatusCondition(before, configv1alpha1.ReadyCondition); w == "" || c != nil && strings.HasSuffix(c.Message, warningsSeparator+w) {
		return ""
	}
	return w
}

// setStatus sets a Repository's status from the facts and the outcome.
func setStatus(repo *configv1alpha1.Repository, s *scope, o reconciler.Outcome, now time.Time) {
	st := &repo.Status
	reconciler.SetConditions(&st.Conditions, repo.Generation, reconciler.KstatusConditions(repo.Generation, o, readyCondition(s, o))...)
	if o.Complete() {
		st.ObservedGeneration = repo.Generation
	}
	if o.Done() {
		st.Commit = s.store.Head()
		st.PackageCount = s.result.Packages
		st.RevisionCount = s.result.Revisions
		if s.result.Changed() || st.LastSyncTime == nil {
			st.LastSyncTime = &metav1.Time{Time: now.Truncate(time.Second)}
		}
	}
}

// patchStatus is the one place a Repository's status is written (but
// status.packageVariants, the usersReconciler's one field): it turns the
// facts of the reconcile into conditions and fields, writes them only when
// they changed, and announces Ready transitions.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope, o reconciler.Outcome) error {
	if s.busy {
		return nil
	}
	before := s.repo.DeepCopy()
	warn := ""
	if o.Done() {
		warn = newWarnings(before.Status.Conditions, storeWarnings(s))
	}
	_, err := reconciler.PatchStatus(ctx, r.Status, s.repo, func(repo *configv1alpha1.Repository) (bool, error) {
		setStatus(repo, s, o, time.Now())
		return true, nil
	})
	if err != nil {
		return client.IgnoreNotFound(err)
	}
	if c := reconciler.Transition(before.Status.Conditions, s.repo.Status.Conditions); c != nil {
		eventType := "Normal"
		if c.Status != metav1.ConditionTrue {
			eventType = "Warning"
		}
		r.Recorder.Eventf(s.repo, nil, eventType, c.Reason, "Sync", "%s", c.Message)
	}
	if warn != "" {
		r.Recorder.Eventf(s.repo, nil, "Warning", configv1alpha1.SyncWarningReason, "Sync", "%s", warn)
	}
	return nil
}

func shortCommit(h string) string {
	if d, ok := strings.CutPrefix(h, "sha256:"); ok && len(d) > 12 {
		return "sha256:" + d[:12] // an OCI store's head
	}
	if len(h) > 12 {
		return h[:12]
	}
	if h == "" {
		return "an empty branch"
	}
	return h
}
