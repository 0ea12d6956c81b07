package packagerollout

import (
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/reconciler"
	"github.com/scion-dev/scion/internal/rollout"
	"github.com/scion-dev/scion/internal/store"
)

// The rollout's conditions for each place it can be: kstatus sees a
// rollout that publishes or soaks as in progress, one waiting for a person
// as current but not Ready, a stopped one as stalled.
func TestSetStatus(t *testing.T) {
	waves := []configv1alpha1.WaveStatus{{Name: "canary", State: configv1alpha1.WaveComplete, Revisions: []string{"a"}}}
	for _, tc := range []struct {
		name                                     string
		s                                        scope
		outcome                                  reconciler.Outcome
		ready, progressing, reconciling, stalled metav1.ConditionStatus
		reason                                   string
		observed                                 bool
	}{
		{"started", scope{started: true, waves: waves}, reconciler.Outcome{}, "False", "True", "False", "False", configv1alpha1.WaveProgressingReason, true},
		{"publishing", scope{decision: &rollout.Decision{Phase: rollout.PhaseProgressing, Waves: waves, Blocked: "wave canary: 0 of 1 published"}}, reconciler.Outcome{}, "False", "True", "True", "False", configv1alpha1.WaveProgressingReason, false},
		{"soaking", scope{decision: &rollout.Decision{Phase: rollout.PhaseSoaking, Waves: waves, Blocked: "soaking"}}, reconciler.Outcome{}, "False", "True", "True", "False", configv1alpha1.WaveSoakingReason, false},
		{"awaiting approval", scope{decision: &rollout.Decision{Phase: rollout.PhaseAwaitingApproval, Waves: waves, Blocked: "approve"}}, reconciler.Outcome{}, "False", "False", "False", "False", configv1alpha1.AwaitingApprovalReason, true},
		{"paused", scope{decision: &rollout.Decision{Phase: rollout.PhasePaused, Waves: waves, Blocked: "paused"}}, reconciler.Outcome{}, "False", "False", "False", "False", configv1alpha1.PausedReason, true},
		{"complete", scope{decision: &rollout.Decision{Phase: rollout.PhaseComplete, Waves: waves}}, reconciler.Outcome{}, "True", "False", "False", "False", configv1alpha1.RolloutCompleteReason, true},
		{"failed", scope{decision: &rollout.Decision{Phase: rollout.PhaseFailed, Waves: waves, Blocked: "c1 failed"}}, reconciler.Outcome{Stalled: reconciler.Stall(configv1alpha1.BudgetExceededReason, "c1 failed")}, "False", "False", "False", "True", configv1alpha1.BudgetExceededReason, true},
		{"a publish failed", scope{decision: &rollout.Decision{Phase: rollout.PhaseProgressing, Waves: waves}}, reconciler.Outcome{Err: errors.New("conflict")}, "Unknown", "True", "True", "False", configv1alpha1.RetryingReason, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ro := &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Generation: 4}}
			tc.s.ro, tc.s.now = ro, time.Unix(100, 0)
			setStatus(ro, &tc.s, tc.outcome)
			for typ, want := range map[string]metav1.ConditionStatus{"Ready": tc.ready, "Progressing": tc.progressing, "Reconciling": tc.reconciling, "Stalled": tc.stalled} {
				c := meta.FindStatusCondition(ro.Status.Conditions, typ)
				g.Expect(c).NotTo(BeNil(), typ)
				g.Expect(c.Status).To(Equal(want), typ)
				g.Expect(c.ObservedGeneration).To(Equal(int64(4)), typ)
			}
			g.Expect(meta.FindStatusCondition(ro.Status.Conditions, "Ready").Reason).To(Equal(tc.reason))
			g.Expect(ro.Status.ObservedGeneration == 4).To(Equal(tc.observed))
			g.Expect(ro.Status.Waves).To(Equal(waves))
		})
	}
}

// A rollout's reverts are named by the revision they roll back: a rollout
// created again under the name of one before it does not take the
// earlier one's revert for its own; a long name is cut, the revision
// kept, and the result is a valid workspace.
func TestRollbackWorkspace(t *testing.T) {
	g := NewWithT(t)
	ro := &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Name: "regional-app-v3"}}
	g.Expect(rollbackWorkspace(ro, 2)).To(Equal("rollback-v2-regional-app-v3"))
	g.Expect(rollbackWorkspace(ro, 6)).To(Equal("rollback-v6-regional-app-v3"))
	ro.Name = strings.Repeat("a", 60) + "-x"
	ws := rollbackWorkspace(ro, 12)
	g.Expect(ws).To(HavePrefix("rollback-v12-aaa"))
	g.Expect(store.ValidateWorkspace(ws)).To(Succeed())
}
