package packagevariant

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgdeps"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/reconciler"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/variant"
)

func TestUpstreamNotFoundMessage(t *testing.T) { // pkgservice.UpstreamNotFoundMessage, in the variant's terms
	published := func(n int) store.Revision {
		return store.Revision{Package: "app", Revision: n, Lifecycle: porchv1alpha1.LifecyclePublished}
	}
	draft := store.Revision{Package: "app", Workspace: "ws-2", Lifecycle: porchv1alpha1.LifecycleDraft}
	for _, tc := range []struct {
		upstream configv1alpha1.Upstream
		revs     []store.Revision
		versions []string
		want     string
	}{
		{configv1alpha1.Upstream{Repo: "catalog", Package: "app", VersionRange: "^4"}, []store.Revision{published(3), published(1)}, []string{"1.0.0", "3.0.0"},
			"spec.upstream.versionRange: Repository catalog has no published revision in range ^4 of package app (published versions: 1.0.0, 3.0.0)"},
		{configv1alpha1.Upstream{Repo: "catalog", Package: "app", VersionRange: "^4"}, []store.Revision{draft}, nil,
			"spec.upstream.versionRange: Repository catalog has no published revision in range ^4 of package app (it has no published revision yet)"},
		{configv1alpha1.Upstream{Repo: "catalog", Package: "app", Revision: "7"}, []store.Revision{published(3), published(1), draft}, nil,
			"spec.upstream.revision: Repository catalog has no revision 7 of package app (published revisions: 1, 3)"},
		{configv1alpha1.Upstream{Repo: "catalog", Package: "app", Revision: "v7"}, []store.Revision{draft}, nil,
			"spec.upstream.revision: Repository catalog has no revision v7 of package app (it has no published revision yet)"},
		{configv1alpha1.Upstream{Repo: "catalog", Package: "app", Revision: "1"}, nil, nil,
			"spec.upstream.revision: Repository catalog has no revision 1 of package app (the package is not in that repository)"},
		{configv1alpha1.Upstream{Repo: "catalog", Package: "app", WorkspaceName: "ws-9"}, []store.Revision{published(1), draft}, nil,
			"spec.upstream.workspaceName: Repository catalog has no workspace ws-9 of package app (unpublished workspaces: ws-2)"},
	} {
		NewWithT(t).Expect(pkgservice.UpstreamNotFoundMessage(field.NewPath("spec", "upstream"), &tc.upstream, tc.revs, tc.versions)).To(Equal(tc.want))
	}
}

// The variant's Ready follows DownstreamEnsured for a complete
// reconcile, and the outcome otherwise; observedGeneration and the targets
// move only for a complete reconcile.
func TestSetStatus(t *testing.T) {
	ensured := metav1.Condition{Type: configv1alpha1.DownstreamEnsuredCondition, Status: metav1.ConditionTrue, Reason: variant.DownstreamReadyReason, Message: "ok"}
	notInjected := metav1.Condition{Type: configv1alpha1.DownstreamEnsuredCondition, Status: metav1.ConditionFalse, Reason: variant.ConfigNotInjectedReason, Message: "no match"}
	target := []configv1alpha1.DownstreamTarget{{Name: "down.app.packagevariant-1"}}
	for _, tc := range []struct {
		name                 string
		s                    scope
		outcome              reconciler.Outcome
		ready                metav1.ConditionStatus
		reason               string
		reconciling, stalled metav1.ConditionStatus
		observed             bool
	}{
		{"ensured", scope{conditions: []metav1.Condition{ensured}, show: showFacts{targets: target}}, reconciler.Outcome{}, "True", variant.DownstreamReadyReason, "False", "False", true},
		{"written but not ensured", scope{conditions: []metav1.Condition{notInjected}, show: showFacts{targets: target}}, reconciler.Outcome{}, "False", variant.ConfigNotInjectedReason, "False", "False", true},
		{"proposal pending", scope{conditions: []metav1.Condition{ensured}, write: writeFacts{proposalPending: "frozen"}, show: showFacts{targets: target}}, reconciler.Outcome{}, "False", configv1alpha1.ProposalPendingReason, "False", "False", true},
		{"stalled", scope{}, reconciler.Outcome{Stalled: reconciler.Stall(configv1alpha1.UpstreamNotFoundReason, "spec.upstream.revision: no")}, "False", configv1alpha1.UpstreamNotFoundReason, "False", "True", true},
		{"waiting for a repository", scope{}, reconciler.Outcome{Waiting: reconciler.Wait(time.Second, porchv1alpha1.RepositoryUnavailableReason, "timeout")}, "False", porchv1alpha1.RepositoryUnavailableReason, "True", "False", false},
		{"write failed after producing", scope{conditions: []metav1.Condition{ensured}, show: showFacts{targets: target}}, reconciler.Outcome{Err: errors.New("push refused")}, "Unknown", configv1alpha1.RetryingReason, "True", "False", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			pv := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
			setStatus(pv, &tc.s, tc.outcome)
			for typ, want := range map[string]metav1.ConditionStatus{"Ready": tc.ready, "Reconciling": tc.reconciling, "Stalled": tc.stalled} {
				c := meta.FindStatusCondition(pv.Status.Conditions, typ)
				g.Expect(c).NotTo(BeNil(), typ)
				g.Expect(c.Status).To(Equal(want), typ)
				g.Expect(c.ObservedGeneration).To(Equal(int64(2)), typ)
			}
			g.Expect(meta.FindStatusCondition(pv.Status.Conditions, "Ready").Reason).To(Equal(tc.reason))
			g.Expect(pv.Status.ObservedGeneration == 2).To(Equal(tc.observed))
			g.Expect(pv.Status.DownstreamTargets != nil).To(Equal(tc.observed && tc.s.show.targets != nil))
			if tc.outcome.Err != nil {
				c := meta.FindStatusCondition(pv.Status.Conditions, configv1alpha1.DownstreamEnsuredCondition)
				g.Expect(c.Status).To(Equal(metav1.ConditionUnknown), "produced, but not in git")
				g.Expect(c.Message).To(Equal("the downstream draft is not written yet: " + tc.outcome.Err.Error()))
			}
			if tc.s.write.proposalPending != "" {
				g.Expect(meta.FindStatusCondition(pv.Status.Conditions, configv1alpha1.DownstreamEnsuredCondition).Reason).To(Equal(configv1alpha1.ProposalPendingReason))
			}
		})
	}
}

// A written draft whose dependencies only a person can fix (refused for a
// conflict, missing, unsatisfiable) is not Ready, naming them; one whose
// dependencies wait to be published is.
func TestReadyCondition_dependencies(t *testing.T) {
	g := NewWithT(t)
	ensured := metav1.Condition{Type: configv1alpha1.DownstreamEnsuredCondition, Status: metav1.ConditionTrue, Reason: "DownstreamReady", Message: "the downstream draft reflects the variant"}
	deps := func(reason, msg string) metav1.Condition {
		return metav1.Condition{Type: configv1alpha1.DependenciesReadyCondition, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	}
	c := readyCondition([]metav1.Condition{ensured, deps(pkgdeps.DependencyConflictReason, "widget-crds is at 0.9.0, put there by someone else")})
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Reason).To(Equal(pkgdeps.DependencyConflictReason))
	g.Expect(c.Message).To(Equal("the downstream draft is written, but its dependencies are not ready: widget-crds is at 0.9.0, put there by someone else"))
	g.Expect(readyCondition([]metav1.Condition{ensured, deps(pkgdeps.DependenciesUnsatisfiableReason, "no version")}).Status).To(Equal(metav1.ConditionFalse))
	c = readyCondition([]metav1.Condition{ensured, deps(pkgdeps.DependencyPendingReason, "widget-crds is a draft")})
	g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "waiting for a publication")
	g.Expect(c.Reason).To(Equal("DownstreamReady"))
	c = readyCondition([]metav1.Condition{{Type: configv1alpha1.DownstreamEnsuredCondition, Status: metav1.ConditionFalse, Reason: "RenderFailed", Message: "x"}, deps(pkgdeps.DependencyConflictReason, "y")})
	g.Expect(c.Reason).To(Equal("RenderFailed"), "the draft's own failure first")
}
