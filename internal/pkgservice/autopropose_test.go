package pkgservice

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

func TestAutoPropose(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	draft := func(annotations map[string]string, conditions ...porchv1alpha1.Condition) *porchv1alpha1.PackageRevision {
		return &porchv1alpha1.PackageRevision{
			ObjectMeta: metav1.ObjectMeta{Annotations: annotations},
			Spec:       porchv1alpha1.PackageRevisionSpec{ReadinessGates: []kptfilev1.ReadinessGate{{ConditionType: "example.com/ipam"}, {ConditionType: "example.com/valid"}}},
			Status:     porchv1alpha1.PackageRevisionStatus{Conditions: conditions},
		}
	}
	on := map[string]string{porchv1alpha1.AutoLifecycleAnnotation: "true"}
	settle := map[string]string{porchv1alpha1.AutoLifecycleAnnotation: "true", porchv1alpha1.AutoProposeSettleAnnotation: "1m"}
	ipam := porchv1alpha1.Condition{Type: "example.com/ipam", Status: "True"}
	valid := porchv1alpha1.Condition{Type: "example.com/valid", Status: "True"}
	invalidCond := porchv1alpha1.Condition{Type: "example.com/valid", Status: "False"}
	for _, tc := range []struct {
		name    string
		pr      *porchv1alpha1.PackageRevision
		changed time.Duration // ago
		variant VariantState
		want    ProposeDecision
	}{
		{"not annotated", draft(nil, ipam, valid), time.Hour, VariantState{}, ProposeDecision{Why: `not annotated config.porch.kpt.dev/auto-lifecycle-mgmt: "true"`}},
		{"annotated false", draft(map[string]string{porchv1alpha1.AutoLifecycleAnnotation: "false"}, ipam, valid), time.Hour, VariantState{}, ProposeDecision{Why: `not annotated config.porch.kpt.dev/auto-lifecycle-mgmt: "true"`}},
		{"a gate unset", draft(on, ipam), time.Hour, VariantState{}, ProposeDecision{Why: "readiness gates not met: example.com/valid"}},
		{"a gate False", draft(on, ipam, invalidCond), time.Hour, VariantState{}, ProposeDecision{Why: "readiness gates not met: example.com/valid"}},
		{"variant not ready", draft(on, ipam, valid), time.Hour, VariantState{Name: "app", Ready: false},
			ProposeDecision{Why: "PackageVariant app is not Ready for its current generation", After: 5 * time.Second}},
		{"still settling", draft(settle, ipam, valid), 20 * time.Second, VariantState{},
			ProposeDecision{Why: "its content changed 20s ago; it settles for 1m0s", After: 40 * time.Second}},
		{"settled", draft(settle, ipam, valid), time.Minute, VariantState{Name: "app", Ready: true},
			ProposeDecision{Propose: true, Why: "every readiness gate is True, PackageVariant app is Ready, unchanged for 1m0s"}},
		{"ready", draft(on, ipam, valid), 0, VariantState{}, ProposeDecision{Propose: true, Why: "every readiness gate is True"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AutoPropose(tc.pr, now.Add(-tc.changed), tc.variant, now)
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
			NewWithT(t).Expect(got).To(Equal(tc.want))
		})
	}
	_, err := AutoPropose(draft(map[string]string{porchv1alpha1.AutoLifecycleAnnotation: "true", porchv1alpha1.AutoProposeSettleAnnotation: "soon"}), now, VariantState{}, now)
	NewWithT(t).Expect(err).To(And(MatchError(ErrInvalid), MatchError(ContainSubstring(`metadata.annotations[config.porch.kpt.dev/auto-propose-settle]: "soon" is not a duration such as 30s or 5m`))))
}
