package packagevariant

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
)

// TestProducedMemo: a remembered production comes back as it was put,
// render status included, under its key only; what a reconcile does
// with the result it got does not change the memo.
func TestProducedMemo(t *testing.T) {
	g := NewWithT(t)
	m := &producedMemo{}
	name := types.NamespacedName{Namespace: "ns", Name: "pv"}
	key := producedKey{uid: "uid-1", generation: 2, draft: "abc"}
	render := &kptfilev1.RenderStatus{MutationSteps: []kptfilev1.StepResult{{
		Name: "set-namespace", Image: "set-namespace:v1", Results: []kptfilev1.ResultItem{{Message: "namespace set", Severity: "info", File: "ns.yaml"}},
	}}}
	conditions := []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Ready"}}
	m.put(name, producedResult{key: key, conditions: conditions, render: render.DeepCopy()})

	got, ok := m.get(name, key)
	g.Expect(ok).To(BeTrue())
	g.Expect(got.render).To(Equal(render))
	g.Expect(got.conditions).To(Equal(conditions))
	got.render.MutationSteps[0].Name = "changed by the reconcile"
	again, _ := m.get(name, key)
	g.Expect(again.render).To(Equal(render), "each get has its own render status")

	other := key
	other.draft = "def"
	_, ok = m.get(name, other)
	g.Expect(ok).To(BeFalse(), "another key (a new draft commit) misses")

	m.put(name, producedResult{key: key})
	got, ok = m.get(name, key)
	g.Expect(ok).To(BeTrue())
	g.Expect(got.render).To(BeNil(), "no render status stays none")
}
