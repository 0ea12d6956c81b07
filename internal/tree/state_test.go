package tree

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

// One judgement of a rollout: waiting is not failed; stopped is.
func TestRolloutState(t *testing.T) {
	cond := func(typ, status, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionStatus(status), Reason: reason}
	}
	for _, tc := range []struct {
		name  string
		conds []metav1.Condition
		spec  configv1alpha1.PackageRolloutSpec
		want  string
	}{
		{"waiting within the deadline: Ready=False, not failed", []metav1.Condition{cond("Ready", "False", configv1alpha1.WaveProgressingReason)}, configv1alpha1.PackageRolloutSpec{}, RolloutProgressing},
		{"not reconciled yet", nil, configv1alpha1.PackageRolloutSpec{}, RolloutProgressing},
		{"complete", []metav1.Condition{cond("Ready", "True", "Complete")}, configv1alpha1.PackageRolloutSpec{}, RolloutComplete},
		{"failed", []metav1.Condition{cond("Ready", "False", configv1alpha1.BudgetExceededReason), cond("Stalled", "True", configv1alpha1.BudgetExceededReason)}, configv1alpha1.PackageRolloutSpec{}, RolloutFailed},
		{"aborted", []metav1.Condition{cond("Stalled", "True", configv1alpha1.AbortedReason)}, configv1alpha1.PackageRolloutSpec{Aborted: true}, RolloutAborted},
		{"abort asked, not carried out yet", []metav1.Condition{cond("Ready", "False", configv1alpha1.WaveProgressingReason)}, configv1alpha1.PackageRolloutSpec{Aborted: true}, RolloutAborted},
		{"paused", []metav1.Condition{cond("Ready", "False", configv1alpha1.WaveProgressingReason)}, configv1alpha1.PackageRolloutSpec{Paused: true}, RolloutPaused},
		{"awaiting approval", []metav1.Condition{cond("Ready", "False", configv1alpha1.AwaitingApprovalReason)}, configv1alpha1.PackageRolloutSpec{}, RolloutAwaitingApproval},
	} {
		ro := &configv1alpha1.PackageRollout{Spec: tc.spec, Status: configv1alpha1.PackageRolloutStatus{Conditions: tc.conds}}
		if got := RolloutState(ro); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, got, tc.want)
		}
	}
	for state, finished := range map[string]bool{RolloutComplete: true, RolloutFailed: true, RolloutAborted: true, RolloutProgressing: false, RolloutPaused: false, RolloutAwaitingApproval: false} {
		if RolloutFinished(state) != finished {
			t.Errorf("RolloutFinished(%s) = %v", state, !finished)
		}
	}
}

// A target unhealthy is failed only once its wave failed, as the wave's
// counts say.
func TestTargetState(t *testing.T) {
	unhealthy := Target{Published: true, Status: "False"}
	for _, tc := range []struct {
		t    Target
		wave configv1alpha1.WaveState
		want string
	}{
		{Target{}, configv1alpha1.WavePending, TargetPending},
		{Target{Published: true, Status: "True"}, configv1alpha1.WaveProgressing, TargetHealthy},
		{unhealthy, configv1alpha1.WaveProgressing, TargetWaiting},
		{Target{Published: true, Status: "Unknown"}, configv1alpha1.WaveSoaking, TargetWaiting},
		{unhealthy, configv1alpha1.WaveFailed, TargetFailed},
	} {
		if got := TargetState(tc.t, tc.wave); got != tc.want {
			t.Errorf("%+v in a %s wave: got %s, want %s", tc.t, tc.wave, got, tc.want)
		}
	}
}
