package reconciler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/store"
)

type facts struct{ ran []string }

func step(name string, res ctrl.Result, err error) Step[*facts] {
	return func(_ context.Context, f *facts) (ctrl.Result, error) {
		f.ran = append(f.ran, name)
		return res, err
	}
}

func TestRun(t *testing.T) {
	transient := errors.New("connection reset")
	for _, tc := range []struct {
		name     string
		steps    []Step[*facts]
		ran      []string
		result   ctrl.Result
		err      error
		complete bool
		done     bool
	}{
		{"all steps run; the soonest requeue wins",
			[]Step[*facts]{step("a", ctrl.Result{RequeueAfter: time.Minute}, nil), step("b", ctrl.Result{RequeueAfter: time.Second}, nil), step("c", ctrl.Result{}, nil)},
			[]string{"a", "b", "c"}, ctrl.Result{RequeueAfter: time.Second}, nil, true, true},
		{"a stall stops the steps, is not an error and does not requeue",
			[]Step[*facts]{step("a", ctrl.Result{}, Stall("BadSpec", "spec.x: bad")), step("b", ctrl.Result{}, nil)},
			[]string{"a"}, ctrl.Result{}, nil, true, false},
		{"waiting requeues without an error",
			[]Step[*facts]{step("a", ctrl.Result{}, fmt.Errorf("opening: %w", Wait(15*time.Second, "RepositoryNotReady", "not yet"))), step("b", ctrl.Result{}, nil)},
			[]string{"a"}, ctrl.Result{RequeueAfter: 15 * time.Second}, nil, false, false},
		{"a transient error is returned for backoff",
			[]Step[*facts]{step("a", ctrl.Result{}, nil), step("b", ctrl.Result{}, transient), step("c", ctrl.Result{}, nil)},
			[]string{"a", "b"}, ctrl.Result{}, transient, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			f := &facts{}
			o := Run(context.Background(), f, tc.steps...)
			g.Expect(f.ran).To(Equal(tc.ran))
			res, err := o.Return(nil)
			g.Expect(res).To(Equal(tc.result))
			if tc.err == nil {
				g.Expect(err).NotTo(HaveOccurred())
			} else {
				g.Expect(err).To(BeIdenticalTo(tc.err))
			}
			g.Expect(o.Complete()).To(Equal(tc.complete))
			g.Expect(o.Done()).To(Equal(tc.done))
		})
	}
}

func TestOutcome_ReturnJoinsTheStatusError(t *testing.T) {
	g := NewWithT(t)
	statusErr := errors.New("status write refused")
	_, err := Outcome{Waiting: Wait(time.Second, "X", "y")}.Return(statusErr)
	g.Expect(err).To(MatchError(statusErr), "a failed status write is retried")
	_, err = Outcome{Err: errors.New("git")}.Return(statusErr)
	g.Expect(err).To(MatchError(statusErr))
	g.Expect(err).To(MatchError(ContainSubstring("git")))
}

// A lost race (an API server conflict, a git compare-and-swap lost) is
// retried soon without an error (no error log, no failure backoff); any
// other failure is returned.
func TestOutcome_ReturnRetriesLostRaces(t *testing.T) {
	g := NewWithT(t)
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "packagelocks"}, "cluster-06", errors.New("the object has been modified"))
	for _, err := range []error{
		conflict,
		fmt.Errorf("writing the lock: %w", conflict),
		fmt.Errorf("pushing: %w", store.ErrConflict),
		&store.ConflictError{Ref: "refs/heads/drafts/app/ws"},
	} {
		res, rerr := Outcome{Err: err}.Return(nil)
		g.Expect(rerr).NotTo(HaveOccurred(), err.Error())
		g.Expect(res.RequeueAfter).To(BeNumerically(">=", 100*time.Millisecond), err.Error())
		g.Expect(res.RequeueAfter).To(BeNumerically("<", 500*time.Millisecond), err.Error())
		g.Expect(Expected(err)).To(BeTrue())
	}
	other := errors.New("push refused: pre-receive hook declined")
	_, rerr := Outcome{Err: other}.Return(nil)
	g.Expect(rerr).To(Equal(other))
	g.Expect(Expected(other)).To(BeFalse())
	// The status write failing is not hidden; its losing a race is one.
	_, rerr = Outcome{Err: conflict}.Return(errors.New("status write failed"))
	g.Expect(rerr).To(MatchError(ContainSubstring("status write failed")))
	res, rerr := Outcome{}.Return(conflict)
	g.Expect(rerr).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(BeNumerically(">", 0))
	// Joined, a race hides nothing else.
	g.Expect(Expected(errors.Join(fmt.Errorf("x: %w", store.ErrConflict), errors.New("fetch failed")))).To(BeFalse())
	g.Expect(Expected(errors.Join(fmt.Errorf("x: %w", store.ErrConflict), nil))).To(BeTrue())
}

// An error that says retrying cannot help (a package over a limit) stalls
// with its reason, wrapped however deep, and is looked at again later.
func TestClassify_stallReason(t *testing.T) {
	g := NewWithT(t)
	err := fmt.Errorf("reading upstream: %w", &store.LimitError{What: "file big.yaml of package app (20Mi)", Limit: "max-file-size", Value: 16 << 20})
	o := Classify(ctrl.Result{}, err)
	g.Expect(o.Err).NotTo(HaveOccurred())
	g.Expect(o.Stalled).NotTo(BeNil())
	g.Expect(o.Stalled.Reason).To(Equal(store.LimitExceededReason))
	g.Expect(o.Stalled.Message).To(Equal("reading upstream: file big.yaml of package app (20Mi) is over the max-file-size limit of 16Mi"))
	g.Expect(o.Stalled.Retry).To(Equal(stallRetry))
}

type waitFor struct{}

func (waitFor) Error() string                       { return "Repository blueprints does not exist" }
func (waitFor) WaitReason() (string, time.Duration) { return "RepositoryNotFound", 15 * time.Second }

// Errors are classified here once, for every controller: an error that
// says it waits (the package service's) is waiting with its reason; a
// remote that did not answer is waiting until it may have recovered
// (RepositoryUnavailable), however deep it is wrapped; neither is a
// failure with backoff.
func TestClassify_waits(t *testing.T) {
	g := NewWithT(t)
	o := Classify(ctrl.Result{}, fmt.Errorf("downstream: %w", waitFor{}))
	g.Expect(o.Err).NotTo(HaveOccurred())
	g.Expect(o.Waiting).NotTo(BeNil())
	g.Expect(*o.Waiting).To(Equal(WaitingError{Reason: "RepositoryNotFound", Message: "downstream: Repository blueprints does not exist", After: 15 * time.Second}))

	retryAt := time.Now().Add(time.Minute)
	o = Classify(ctrl.Result{}, fmt.Errorf("fetching cluster-01: %w", &store.UnavailableError{RetryAt: retryAt, Err: errors.New("i/o timeout")}))
	g.Expect(o.Err).NotTo(HaveOccurred())
	g.Expect(o.Waiting).NotTo(BeNil())
	g.Expect(o.Waiting.Reason).To(Equal(porchv1alpha1.RepositoryUnavailableReason))
	g.Expect(o.Waiting.Message).To(ContainSubstring("fetching cluster-01: "))
	g.Expect(o.Waiting.After).To(BeNumerically("~", time.Minute, 5*time.Second))

	o = Classify(ctrl.Result{}, errors.New("something else"))
	g.Expect(o.Waiting).To(BeNil())
	g.Expect(o.Err).To(MatchError("something else"))
}

func TestKstatusConditions(t *testing.T) {
	ready := metav1.Condition{Status: metav1.ConditionTrue, Reason: "Synced", Message: "all good"}
	notReady := metav1.Condition{Status: metav1.ConditionFalse, Reason: "SyncFailed", Message: "conflict"}
	for _, tc := range []struct {
		name                         string
		outcome                      Outcome
		ready                        metav1.Condition
		wantReady                    metav1.ConditionStatus
		wantReason                   string
		wantReconciling, wantStalled metav1.ConditionStatus
	}{
		{"done shows the controller's verdict", Outcome{}, ready, "True", "Synced", "False", "False"},
		{"done and not ready", Outcome{}, notReady, "False", "SyncFailed", "False", "False"},
		{"stalled", Outcome{Stalled: Stall("ValidationError", "spec.a: bad")}, ready, "False", "ValidationError", "False", "True"},
		{"waiting", Outcome{Waiting: Wait(time.Second, "RepositoryNotReady", "r")}, ready, "False", "RepositoryNotReady", "True", "False"},
		{"transient, no verdict", Outcome{Err: errors.New("reset")}, ready, "Unknown", configv1alpha1.RetryingReason, "True", "False"},
		{"transient with the controller's reason", Outcome{Err: errors.New("conflict")}, notReady, "False", "SyncFailed", "True", "False"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := map[string]metav1.Condition{}
			for _, c := range KstatusConditions(7, tc.outcome, tc.ready) {
				g.Expect(c.ObservedGeneration).To(Equal(int64(7)))
				got[c.Type] = c
			}
			g.Expect(got).To(HaveLen(3))
			g.Expect(got[configv1alpha1.ReadyCondition].Status).To(Equal(tc.wantReady))
			g.Expect(got[configv1alpha1.ReadyCondition].Reason).To(Equal(tc.wantReason))
			g.Expect(got[configv1alpha1.ReconcilingCondition].Status).To(Equal(tc.wantReconciling))
			g.Expect(got[configv1alpha1.StalledCondition].Status).To(Equal(tc.wantStalled))
		})
	}
	g := NewWithT(t)
	g.Expect(KstatusConditions(1, Outcome{}, metav1.Condition{})).To(HaveLen(2), "no verdict, no Ready")
}

// A condition type written twice (an atomic list lets a status patch do
// that) is left once by the controller's next write: the first, updated;
// other types and their order are kept.
func TestSetConditions_dropsARepeatedType(t *testing.T) {
	g := NewWithT(t)
	conds := []metav1.Condition{
		{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Forged"},
		{Type: "Valid", Status: metav1.ConditionTrue, Reason: "Valid"},
		{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Forged"},
		{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Forged"},
	}
	SetConditions(&conds, 3, metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "RepositoryNotFound"})
	g.Expect(conds).To(HaveLen(2))
	g.Expect(conds[0].Type).To(Equal("Ready"))
	g.Expect(conds[0].Reason).To(Equal("RepositoryNotFound"))
	g.Expect(conds[0].ObservedGeneration).To(Equal(int64(3)))
	g.Expect(conds[1].Type).To(Equal("Valid"))
}

func TestTransition(t *testing.T) {
	g := NewWithT(t)
	c := func(status metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: configv1alpha1.ReadyCondition, Status: status, Reason: reason}}
	}
	g.Expect(Transition(nil, c("True", "A"))).NotTo(BeNil())
	g.Expect(Transition(c("True", "A"), c("True", "A"))).To(BeNil())
	g.Expect(Transition(c("True", "A"), c("False", "A"))).NotTo(BeNil())
	g.Expect(Transition(c("False", "A"), c("False", "B"))).NotTo(BeNil())
	g.Expect(Transition(c("False", "A"), nil)).To(BeNil())
}

// What a reconcile hands the controller to log, and what it writes into a
// condition, is bounded, however long the value it quotes (a 70,000-byte
// label the API server refused): the chain of errors is kept whole.
func TestBounded(t *testing.T) {
	g := NewWithT(t)
	long := strings.Repeat("x", 70000)
	refused := apierrors.NewInvalid(schema.GroupKind{Group: "porch.kpt.dev", Kind: "PackageRevision"}, "r", nil)
	cause := fmt.Errorf("writing metadata.labels[team]=%q: %w", long, refused)
	_, err := Outcome{Err: cause}.Return(nil)
	g.Expect(len(err.Error())).To(BeNumerically("<", MaxLogged+100))
	g.Expect(err.Error()).To(HaveSuffix("bytes more)"))
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "the chain is kept")
	_, err = Outcome{Err: errors.New("short")}.Return(nil)
	g.Expect(err).To(MatchError("short"))

	var conds []metav1.Condition
	SetConditions(&conds, 1, metav1.Condition{Type: configv1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: "Invalid", Message: long})
	g.Expect(len(conds[0].Message)).To(BeNumerically("<", MaxMessage+100))
}
