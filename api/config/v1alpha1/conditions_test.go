package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestReadyAt: Ready counts only when it was written for the object's
// current generation.
func TestReadyAt(t *testing.T) {
	ready := []metav1.Condition{{Type: ReadyCondition, Status: metav1.ConditionTrue}}
	notReady := []metav1.Condition{{Type: ReadyCondition, Status: metav1.ConditionFalse}}
	for _, c := range []struct {
		name                 string
		conditions           []metav1.Condition
		generation, observed int64
		want                 bool
	}{
		{"ready at its generation", ready, 3, 3, true},
		{"ready for an older spec", ready, 4, 3, false},
		{"not ready", notReady, 3, 3, false},
		{"no condition yet", nil, 1, 1, false},
	} {
		if got := ReadyAt(c.conditions, c.generation, c.observed); got != c.want {
			t.Errorf("%s: ReadyAt = %v, want %v", c.name, got, c.want)
		}
	}
}
