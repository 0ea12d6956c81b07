package repository

import (
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/reconciler"
	"github.com/scion-dev/scion/internal/repocache"
	"github.com/scion-dev/scion/internal/store"
)

func TestOpenFailure(t *testing.T) {
	withSecret := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "https://example.com/r.git", SecretRef: &configv1alpha1.SecretRef{Name: "creds"}}}}
	bare := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "https://example.com/r.git"}}}
	inURL := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "https://bob:hunter2@example.com/r.git"}}}
	for _, tc := range []struct {
		name    string
		repo    *configv1alpha1.Repository
		err     error
		stalled bool
		reason  string
		message string
	}{
		{"refused credentials name the Secret", withSecret, fmt.Errorf("fetch: %w", store.ErrAuthentication), true, configv1alpha1.AuthenticationFailedReason, "check the credentials in secret ns/creds"},
		{"no credentials say which field", bare, store.ErrAuthentication, true, configv1alpha1.AuthenticationFailedReason, "set spec.git.secretRef"},
		{"credentials in the URL are named as such", inURL, store.ErrAuthentication, true, configv1alpha1.AuthenticationFailedReason, "fix the credentials in spec.git.repo, or better, move them into a Secret named in spec.git.secretRef"},
		{"missing repository", bare, store.ErrRepositoryNotFound, true, porchv1alpha1.RepositoryNotFoundReason, ""},
		{"missing branch", bare, store.ErrBranchNotFound, true, configv1alpha1.BranchNotFoundReason, ""},
		{"bad Secret", withSecret, repocache.ErrSecret, true, configv1alpha1.SecretErrorReason, ""},
		{"URL refused", bare, repocache.ErrURLNotAllowed, true, configv1alpha1.URLNotAllowedReason, ""},
		{"anything else from git", bare, errors.New("bad pack"), true, configv1alpha1.GitErrorReason, "bad pack"},
		{"remote not answering is waited for", bare, &store.UnavailableError{Err: errors.New("timeout"), RetryAt: time.Now().Add(time.Minute)}, false, configv1alpha1.RemoteUnavailableReason, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			o := reconciler.Classify(ctrl.Result{}, openFailure(tc.repo, tc.err, time.Minute))
			if tc.stalled {
				g.Expect(o.Stalled).NotTo(BeNil())
				g.Expect(o.Stalled.Reason).To(Equal(tc.reason))
				g.Expect(o.Stalled.Message).To(ContainSubstring(tc.message))
				g.Expect(o.Stalled.Retry).To(Equal(time.Minute), "fixes made outside the spec are looked for")
				return
			}
			g.Expect(o.Waiting).NotTo(BeNil())
			g.Expect(o.Waiting.Reason).To(Equal(tc.reason))
			g.Expect(o.Waiting.Message).To(ContainSubstring(tc.message))
		})
	}
}

func TestSetStatus(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		outcome     reconciler.Outcome
		ready       metav1.ConditionStatus
		reason      string
		reconciling metav1.ConditionStatus
		stalled     metav1.ConditionStatus
		observed    bool
		synced      bool
	}{
		{"stalled on credentials", reconciler.Outcome{Stalled: reconciler.Stall(configv1alpha1.AuthenticationFailedReason, "refused")}, "False", configv1alpha1.AuthenticationFailedReason, "False", "True", true, false},
		{"waiting for the remote", reconciler.Outcome{Waiting: reconciler.Wait(time.Second, configv1alpha1.RemoteUnavailableReason, "timeout")}, "False", configv1alpha1.RemoteUnavailableReason, "True", "False", false, false},
		{"sync failed", reconciler.Outcome{Err: fmt.Errorf("%w: conflict", errSync)}, "False", configv1alpha1.SyncFailedReason, "True", "False", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			repo := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Generation: 3}}
			setStatus(repo, &scope{repo: repo}, tc.outcome, now)
			expectCondition(g, repo, configv1alpha1.ReadyCondition, tc.ready, tc.reason)
			expectCondition(g, repo, configv1alpha1.ReconcilingCondition, tc.reconciling, "")
			expectCondition(g, repo, configv1alpha1.StalledCondition, tc.stalled, "")
			g.Expect(repo.Status.ObservedGeneration == 3).To(Equal(tc.observed))
			g.Expect(repo.Status.LastSyncTime != nil).To(Equal(tc.synced))
		})
	}
}

func expectCondition(g Gomega, repo *configv1alpha1.Repository, typ string, status metav1.ConditionStatus, reason string) {
	c := meta.FindStatusCondition(repo.Status.Conditions, typ)
	g.Expect(c).NotTo(BeNil(), typ)
	g.Expect(c.Status).To(Equal(status), typ)
	g.Expect(c.ObservedGeneration).To(Equal(int64(3)), typ)
	if reason != "" {
		g.Expect(c.Reason).To(Equal(reason), typ)
	}
}

// The next sync comes after the sync period, or at a one-time sync
// (porchctl repo sync's runOnceAt) due sooner; one in the past or later
// than the period changes nothing.
func TestNextSync(t *testing.T) {
	g := NewWithT(t)
	r := &Reconciler{Options: Options{SyncPeriod: 5 * time.Minute}}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	repo := &configv1alpha1.Repository{}
	g.Expect(r.nextSync(repo, now)).To(Equal(5 * time.Minute))
	repo.Spec.Sync = &configv1alpha1.RepositorySync{RunOnceAt: &metav1.Time{Time: now.Add(time.Minute)}}
	g.Expect(r.nextSync(repo, now)).To(Equal(time.Minute))
	repo.Spec.Sync.RunOnceAt = &metav1.Time{Time: now.Add(-time.Minute)}
	g.Expect(r.nextSync(repo, now)).To(Equal(5 * time.Minute))
	repo.Spec.Sync.RunOnceAt = &metav1.Time{Time: now.Add(time.Hour)}
	g.Expect(r.nextSync(repo, now)).To(Equal(5 * time.Minute))
	repo.Spec.Sync.Period = &metav1.Duration{Duration: 30 * time.Second}
	repo.Spec.Sync.RunOnceAt = &metav1.Time{Time: now.Add(10 * time.Second)}
	g.Expect(r.nextSync(repo, now)).To(Equal(10 * time.Second))
}

// TestNewWarnings: a sync's warnings are announced (a SyncWarning event)
// when the Ready condition did not say them before, once.
func TestNewWarnings(t *testing.T) {
	g := NewWithT(t)
	ready := func(msg string) []metav1.Condition {
		return []metav1.Condition{{Type: configv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: configv1alpha1.SyncedReason, Message: msg}}
	}
	w := "1 warning(s): r/p/nginx:latest: not a Scion package"
	g.Expect(newWarnings(nil, w)).To(Equal(w), "a new Repository")
	g.Expect(newWarnings(ready("3 package revisions at sha256:1"), w)).To(Equal(w), "warnings where there were none")
	g.Expect(newWarnings(ready("4 package revisions at sha256:2; "+w), w)).To(BeEmpty(), "the same, said before at another head")
	g.Expect(newWarnings(ready("3 package revisions at sha256:1; 1 warning(s): r/p/app:v1: moved"), w)).To(Equal(w), "other warnings before")
	g.Expect(newWarnings(ready("3 package revisions at sha256:1; "+w), "")).To(BeEmpty(), "no warnings now")
	failed := []metav1.Condition{{Type: configv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: configv1alpha1.SyncFailedReason, Message: "the registry hung"}}
	g.Expect(newWarnings(failed, w)).To(Equal(w), "after a failed sync")
}
