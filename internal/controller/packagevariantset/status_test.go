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
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	"github.com/scion-dev/scion/internal/kindwatch"
	"github.com/scion-dev/scion/internal/reconciler"
	"github.com/scion-dev/scion/internal/variantset"
)

// The set's status: counts add up over one generation, observedGeneration
// moves only for a complete reconcile, kstatus polarity per outcome.
func TestSetStatus(t *testing.T) {
	for _, tc := range []struct {
		name                        string
		outcome                     reconciler.Outcome
		prevGen                     int64
		countsGen                   int64 // the generation the status's counts are of
		wantObserved                int64
		wantCreated                 int
		ready, reconciling, stalled metav1.ConditionStatus
	}{
		{"done adds to this generation's counts", reconciler.Outcome{}, 4, 4, 4, 3, "True", "False", "False"},
		{"done, first of a new generation", reconciler.Outcome{}, 3, 3, 4, 1, "True", "False", "False"},
		// A reconcile of generation 4 wrote, then failed: what it wrote
		// still counts when the next one completes.
		{"done after a failed reconcile of this generation", reconciler.Outcome{}, 3, 4, 4, 3, "True", "False", "False"},
		{"a failed write does not observe the generation", reconciler.Outcome{Err: errors.New("conflict")}, 3, 3, 3, 1, "False", "True", "False"},
		{"waiting does not observe the generation", reconciler.Outcome{Waiting: reconciler.Wait(0, "X", "y")}, 3, 3, 3, 1, "False", "True", "False"},
		{"stalled observes it", reconciler.Outcome{Stalled: reconciler.Stall("ValidationError", "bad")}, 3, 3, 4, 1, "False", "False", "True"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			pvs := &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Generation: 4}}
			pvs.Status.ObservedGeneration = tc.prevGen
			pvs.Status.Summary = &configv1alpha2.Summary{Created: 2, Generation: tc.countsGen}
			setStatus(pvs, &scope{summary: &configv1alpha2.Summary{Desired: 1, Created: 1}}, tc.outcome)
			g.Expect(pvs.Status.ObservedGeneration).To(Equal(tc.wantObserved))
			g.Expect(pvs.Status.Summary.Created).To(Equal(tc.wantCreated))
			for typ, want := range map[string]metav1.ConditionStatus{"Ready": tc.ready, "Reconciling": tc.reconciling, "Stalled": tc.stalled} {
				c := meta.FindStatusCondition(pvs.Status.Conditions, typ)
				g.Expect(c).NotTo(BeNil(), typ)
				g.Expect(c.Status).To(Equal(want), typ)
				g.Expect(c.ObservedGeneration).To(Equal(int64(4)), typ)
			}
		})
	}
}

func TestVariantsReadyCondition(t *testing.T) {
	many := make([]string, 12)
	for i := range many {
		many[i] = fmt.Sprintf("set-cluster-%02d", i)
	}
	for _, tc := range []struct {
		name    string
		s       *scope
		outcome reconciler.Outcome
		status  metav1.ConditionStatus
		reason  string
		message string
	}{
		{"all ready", &scope{summary: &configv1alpha2.Summary{Desired: 3, Ready: 3}}, reconciler.Outcome{},
			metav1.ConditionTrue, configv1alpha2.AllVariantsReadyReason, "all 3 PackageVariants are Ready"},
		{"none generated", &scope{summary: &configv1alpha2.Summary{}}, reconciler.Outcome{},
			metav1.ConditionTrue, configv1alpha2.AllVariantsReadyReason, "the targets generate no PackageVariants"},
		{"some not ready", &scope{summary: &configv1alpha2.Summary{Desired: 3, Ready: 1}, notReady: []string{"a", "b"}}, reconciler.Outcome{},
			metav1.ConditionFalse, configv1alpha2.VariantsNotReadyReason, "1 of 3 PackageVariants are Ready; waiting for a, b"},
		{"many not ready", &scope{summary: &configv1alpha2.Summary{Desired: 12}, notReady: many}, reconciler.Outcome{},
			metav1.ConditionFalse, configv1alpha2.VariantsNotReadyReason, "0 of 12 PackageVariants are Ready; waiting for set-cluster-00, set-cluster-01, set-cluster-02, set-cluster-03, set-cluster-04, set-cluster-05, set-cluster-06, set-cluster-07, set-cluster-08, set-cluster-09 and 2 more"},
		{"stalled", &scope{}, reconciler.Outcome{Stalled: reconciler.Stall(configv1alpha1.ValidationErrorReason, "spec.targets: Required value")},
			metav1.ConditionFalse, configv1alpha1.ValidationErrorReason, "the set is stalled: spec.targets: Required value"},
		{"waiting for the upstream's object", &scope{}, reconciler.Outcome{Waiting: reconciler.Wait(0, configv1alpha1.UpstreamNotFoundReason, "not shown yet")},
			metav1.ConditionFalse, configv1alpha1.UpstreamNotFoundReason, "the set waits: not shown yet"},
		{"write failed", &scope{summary: &configv1alpha2.Summary{Desired: 3, Ready: 3}}, reconciler.Outcome{Err: errors.New("boom")},
			metav1.ConditionFalse, configv1alpha2.UnexpectedErrorReason, "the set's PackageVariants could not all be written"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := variantsReadyCondition(tc.s, tc.outcome)
			NewWithT(t).Expect(c).To(Equal(metav1.Condition{Type: configv1alpha2.VariantsReadyCondition, Status: tc.status, Reason: tc.reason, Message: tc.message}))
		})
	}
}

// An expansion stalls the set only for what its author must fix; failing
// to read the cluster is retried.
func TestExpandFailure(t *testing.T) {
	g := NewWithT(t)
	// Errors as the evaluator makes them: a failed conversion, the cost limit.
	cheap, err := variantset.NewEvaluator(1)
	g.Expect(err).NotTo(HaveOccurred())
	_, costly := cheap.EvalString(context.Background(), field.NewPath("spec", "targets").Index(0).Child("template", "downstream", "packageExpr"),
		"[1,2,3,4,5,6,7,8].map(x, string(x)).join('-')", map[string]any{})
	g.Expect(costly).To(MatchError(ContainSubstring("cost limit")))
	e, err := variantset.NewEvaluator(0)
	g.Expect(err).NotTo(HaveOccurred())
	_, missing := e.EvalString(context.Background(), field.NewPath("spec", "targets").Index(0).Child("template", "downstream", "repoExpr"),
		"string(int('eleven'))", map[string]any{})
	g.Expect(missing).To(MatchError(ContainSubstring("repoExpr")))
	noMatch := &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "example.com", Kind: "Team"}, SearchedVersions: []string{"v1"}}
	for _, tc := range []struct {
		err     error
		reason  string
		stalled bool
	}{
		{fmt.Errorf("spec.targets[0].objectSelector: listing Team.v1.example.com: %w", noMatch), configv1alpha2.NoMatchingTargetsReason, true},
		{fmt.Errorf("spec.targets[0].objectSelector: listing Deployment.v1.apps: %w", &kindwatch.NotAllowedError{Message: "no"}), configv1alpha2.KindNotAllowedReason, true},
		{missing, configv1alpha2.ExpressionFailedReason, true},
		{costly, configv1alpha2.ExpressionFailedReason, true},
		{errors.Join(fmt.Errorf("spec.targets[0]: %w", variantset.ErrDuplicateDownstream)), configv1alpha2.DuplicateDownstreamReason, true},
		{errors.New("something no one expected"), configv1alpha2.UnexpectedErrorReason, true},
		{fmt.Errorf("spec.targets[0].objectSelector: listing ConfigMap.v1: %w", readError(errors.New("the server is currently unable to handle the request"))), "", false},
		{fmt.Errorf("spec.targets[0].template.downstream.repo: reading Repository \"r\": %w", readError(context.DeadlineExceeded)), "", false},
	} {
		reason, stalled := expandFailure(tc.err)
		g.Expect(reason).To(Equal(tc.reason), tc.err.Error())
		g.Expect(stalled).To(Equal(tc.stalled), tc.err.Error())
	}
}

// A recount of the variants moves the counts; it rewrites Ready and
// VariantsReady only of a set its own reconcile found reconciled: a set
// that waits for its upstream's deleted Repository does not read
// Ready=True with none of its variants Ready.
func TestApplyRecount(t *testing.T) {
	g := NewWithT(t)
	waits := metav1.Condition{Type: configv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: "RepositoryNotFound", Message: "Repository blueprints does not exist"}
	pvs := &configv1alpha2.PackageVariantSet{}
	pvs.Generation = 3
	pvs.Status.Summary = &configv1alpha2.Summary{Desired: 6, Ready: 6}
	pvs.Status.Conditions = []metav1.Condition{waits}
	s := &scope{summary: &configv1alpha2.Summary{Desired: 6}, notReady: []string{"a", "b", "c", "d", "e", "f"}}
	applyRecount(pvs, s, nil)
	g.Expect(pvs.Status.Summary.Ready).To(BeZero())
	g.Expect(pvs.Status.Summary.NotReady).To(HaveLen(6))
	ready := meta.FindStatusCondition(pvs.Status.Conditions, configv1alpha1.ReadyCondition)
	g.Expect(ready.Status).To(Equal(metav1.ConditionFalse), "the set's own verdict stays")
	g.Expect(ready.Reason).To(Equal("RepositoryNotFound"))
	g.Expect(meta.FindStatusCondition(pvs.Status.Conditions, configv1alpha2.VariantsReadyCondition)).To(BeNil())

	// Reconciled: Ready's message and VariantsReady follow the count.
	pvs.Status.Conditions = []metav1.Condition{{Type: configv1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: configv1alpha2.ReconciledReason, Message: "6 PackageVariants, 6 ready"}}
	applyRecount(pvs, s, nil)
	ready = meta.FindStatusCondition(pvs.Status.Conditions, configv1alpha1.ReadyCondition)
	g.Expect(ready.Message).To(Equal("6 PackageVariants, 0 ready"))
	g.Expect(meta.FindStatusCondition(pvs.Status.Conditions, configv1alpha2.VariantsReadyCondition).Status).To(Equal(metav1.ConditionFalse))
}
