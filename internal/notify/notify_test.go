package notify

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

// A rollout says a wave waits for approval, failed, or rolled back, each
// an event of its own; a rolled back count that grows is a new event.
func TestEvents_rollout(t *testing.T) {
	ro := &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Status: configv1alpha1.PackageRolloutStatus{Blocked: "wave canary: 1 target unhealthy", Waves: []configv1alpha1.WaveStatus{
			{Name: "canary", State: configv1alpha1.WaveFailed, Targets: 2, Failed: 1, RolledBack: 1},
			{Name: "rest", State: configv1alpha1.WaveAwaitingApproval, Revisions: []string{"a", "b", "c"}},
			{Name: "later", State: configv1alpha1.WavePending},
		}}}
	got := map[string]string{}
	for _, e := range Events(ro) {
		got[e.Key] = e.Reason + ": " + e.Message
	}
	want := map[string]string{
		"PackageRollout/ns/web/wave/canary/failed":       "WaveFailed: PackageRollout ns/web: wave canary failed (1 of 2 targets failed): wave canary: 1 target unhealthy",
		"PackageRollout/ns/web/wave/canary/rolledback/1": "RolledBack: PackageRollout ns/web: wave canary rolled back 1 targets",
		"PackageRollout/ns/web/wave/rest/approval":       "AwaitingApproval: PackageRollout ns/web: wave rest (3 revisions) waits for approval",
	}
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
}
