package packagevariantset

import (
	"context"
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	"github.com/scion-dev/scion/internal/kindwatch"
)

func TestVariantsReadyCondition(t *testing.T) {
	many := make([]string, 12)
	for i := range many {
		many[i] = fmt.Sprintf("set-cluster-%02d", i)
	}
	for _, tc := range []struct {
		name    string
		s       *scope
		err     error
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{"all ready", &scope{summary: &configv1alpha2.Summary{Desired: 3, Ready: 3}}, nil,
			metav1.ConditionTrue, configv1alpha2.AllVariantsReadyReason, "all 3 PackageVariants are Ready"},
		{"none generated", &scope{summary: &configv1alpha2.Summary{}}, nil,
			metav1.ConditionTrue, configv1alpha2.AllVariantsReadyReason, "the targets generate no PackageVariants"},
		{"some not ready", &scope{summary: &configv1alpha2.Summary{Desired: 3, Ready: 1}, notReady: []string{"a", "b"}}, nil,
			metav1.ConditionFalse, configv1alpha2.VariantsNotReadyReason, "1 of 3 PackageVariants are Ready; waiting for a, b"},
		{"many not ready", &scope{summary: &configv1alpha2.Summary{Desired: 12}, notReady: many}, nil,
			metav1.ConditionFalse, configv1alpha2.VariantsNotReadyReason, "0 of 12 PackageVariants are Ready; waiting for set-cluster-00, set-cluster-01, set-cluster-02, set-cluster-03, set-cluster-04, set-cluster-05, set-cluster-06, set-cluster-07, set-cluster-08, set-cluster-09 and 2 more"},
		{"stalled", &scope{stalled: &metav1.Condition{Reason: configv1alpha2.ValidationErrorReason, Message: "spec.targets: Required value"}}, nil,
			metav1.ConditionFalse, configv1alpha2.ValidationErrorReason, "the set is stalled: spec.targets: Required value"},
		{"write failed", &scope{summary: &configv1alpha2.Summary{Desired: 3, Ready: 3}}, errors.New("boom"),
			metav1.ConditionFalse, configv1alpha2.UnexpectedErrorReason, "the set's PackageVariants could not all be written"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := variantsReadyCondition(tc.s, tc.err)
			NewWithT(t).Expect(c).To(Equal(metav1.Condition{Type: configv1alpha2.VariantsReadyCondition, Status: tc.status, Reason: tc.reason, Message: tc.message}))
		})
	}
}

// An expansion stalls the set only for what its author must fix; failing
// to read the cluster is retried.
func TestExpandFailure(t *testing.T) {
	g := NewWithT(t)
	noMatch := &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "example.com", Kind: "Team"}, SearchedVersions: []string{"v1"}}
	for _, tc := range []struct {
		err     error
		reason  string
		stalled bool
	}{
		{fmt.Errorf("spec.targets[0].objectSelector: listing Team.v1.example.com: %w", noMatch), configv1alpha2.NoMatchingTargetsReason, true},
		{fmt.Errorf("spec.targets[0].objectSelector: listing Deployment.v1.apps: %w", &kindwatch.NotAllowedError{Message: "no"}), configv1alpha2.KindNotAllowedReason, true},
		{fmt.Errorf("spec.targets[0].template.downstream.repoExpr: no such key: cluster"), configv1alpha2.UnexpectedErrorReason, true},
		{fmt.Errorf("spec.targets[0].objectSelector: listing ConfigMap.v1: %w", readError(errors.New("the server is currently unable to handle the request"))), "", false},
		{fmt.Errorf("spec.targets[0].template.downstream.repo: reading Repository \"r\": %w", readError(context.DeadlineExceeded)), "", false},
	} {
		reason, stalled := expandFailure(tc.err)
		g.Expect(reason).To(Equal(tc.reason), tc.err.Error())
		g.Expect(stalled).To(Equal(tc.stalled), tc.err.Error())
	}
}
