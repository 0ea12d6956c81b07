package packagerevision

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/reconciler"
)

// The controller's verdict on a PackageRevision: git decides Ready for a
// revision it has (no Ready here), the outcome otherwise.
func TestKstatus(t *testing.T) {
	pr := &porchv1alpha1.PackageRevision{ObjectMeta: metav1.ObjectMeta{Generation: 5}}
	for _, tc := range []struct {
		name                        string
		s                           scope
		outcome                     reconciler.Outcome
		ready, reconciling, stalled porchv1alpha1.ConditionStatus
		reason                      string
	}{
		{"done: Ready comes from git", scope{}, reconciler.Outcome{}, "", "False", "False", ""},
		{"invalid request", scope{}, reconciler.Outcome{Stalled: reconciler.Stall(porchv1alpha1.InvalidReason, "spec.lifecycle: no")}, "False", "False", "True", porchv1alpha1.InvalidReason},
		{"gates not met", scope{}, reconciler.Outcome{Waiting: reconciler.Wait(0, porchv1alpha1.ReadinessGatesNotMetReason, "a, b")}, "False", "True", "False", porchv1alpha1.ReadinessGatesNotMetReason},
		{"repository missing", scope{}, reconciler.Outcome{Waiting: reconciler.Wait(0, porchv1alpha1.RepositoryNotReadyReason, "r")}, "False", "True", "False", porchv1alpha1.RepositoryNotReadyReason},
		{"git refused the deletion", scope{deleteErr: errors.New("push refused")}, reconciler.Outcome{Err: errors.New("push refused")}, "False", "True", "False", porchv1alpha1.DeleteFailedReason},
		{"transient", scope{}, reconciler.Outcome{Err: errors.New("reset")}, "Unknown", "True", "False", configv1alpha1.RetryingReason},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := map[string]porchv1alpha1.Condition{}
			for _, c := range kstatus(pr, &tc.s, tc.outcome) {
				g.Expect(c.ObservedGeneration).To(Equal(int64(5)))
				got[c.Type] = c
			}
			g.Expect(got["Reconciling"].Status).To(Equal(tc.reconciling))
			g.Expect(got["Stalled"].Status).To(Equal(tc.stalled))
			g.Expect(got["Ready"].Status).To(Equal(tc.ready))
			g.Expect(got["Ready"].Reason).To(Equal(tc.reason))
		})
	}
}
