// Package reconciler holds the shape every Scion reconciler shares: steps
// run in order over a scope, typed outcomes (stalled, waiting, transient),
// the kstatus conditions an outcome implies, and the one status write
// (an optimistic-lock patch, re-read and re-applied on conflict).
//
// A controller using it reads:
//
//	obj := &v1alpha1.Kind{}
//	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
//		return ctrl.Result{}, client.IgnoreNotFound(err)
//	}
//	s := &scope{obj: obj}
//	out := reconciler.Run(ctx, s, r.reconcileA, r.reconcileB)
//	return out.Return(r.patchStatus(ctx, s, out))
//
// Steps record facts in the scope; the controller's status.go turns the
// facts and the outcome into conditions.
package reconciler

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/store"
)

// Step is one step of a reconcile over a scope S. It records what it
// learns in the scope and returns a result (a periodic requeue) or an
// error: a *StalledError, a *WaitingError, or a transient error.
type Step[S any] func(ctx context.Context, s S) (ctrl.Result, error)

// StalledError is the outcome of a reconcile that cannot progress until
// someone changes something (usually the spec): Stalled=True, no error
// returned, observedGeneration written. Retry, when set, is a periodic
// look for fixes no event announces (a credential fixed in the remote).
type StalledError struct {
	Reason, Message string
	Retry           time.Duration
}

// Error implements error.
func (e *StalledError) Error() string { return e.Message }

// Stall returns a *StalledError.
func Stall(reason, format string, args ...any) *StalledError {
	return &StalledError{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// WaitingError is the outcome of a reconcile that waits for something
// outside the object (a repository, another object): Reconciling=True
// with the reason, requeued after After, no error returned (no backoff, no
// error log), observedGeneration not written.
type WaitingError struct {
	Reason, Message string
	After           time.Duration
}

// Error implements error.
func (e *WaitingError) Error() string { return e.Message }

// Wait returns a *WaitingError.
func Wait(after time.Duration, reason, format string, args ...any) *WaitingError {
	return &WaitingError{Reason: reason, Message: fmt.Sprintf(format, args...), After: after}
}

// Outcome is how a reconcile ended. At most one of Stalled, Waiting and
// Err is set; none means the steps all completed.
type Outcome struct {
	// Result merges the results of the steps that ran.
	Result  ctrl.Result
	Stalled *StalledError
	Waiting *WaitingError
	// Err is a transient failure, retried with backoff.
	Err error
}

// Complete says whether the reconcile reached a verdict for the object's
// generation (done or stalled): observedGeneration may be written.
func (o Outcome) Complete() bool { return o.Err == nil && o.Waiting == nil }

// Done says whether every step completed.
func (o Outcome) Done() bool { return o.Complete() && o.Stalled == nil }

// Return is what Reconcile returns for the outcome, with statusErr (the
// status write's error) joined to a transient error.
func (o Outcome) Return(statusErr error) (ctrl.Result, error) {
	switch {
	case (o.Err != nil || statusErr != nil) && (o.Err == nil || Expected(o.Err)) && (statusErr == nil || Expected(statusErr)):
		// Lost a race with another writer (the work or the status write):
		// retried soon (reading again), without the error log and backoff
		// of a failure.
		return ctrl.Result{RequeueAfter: RaceRetry()}, nil
	case o.Err != nil && statusErr == nil:
		return ctrl.Result{}, bound(o.Err)
	case o.Err != nil:
		return ctrl.Result{}, bound(errors.Join(o.Err, statusErr))
	case statusErr != nil:
		return ctrl.Result{}, bound(statusErr)
	case o.Waiting != nil:
		return ctrl.Result{RequeueAfter: o.Waiting.After}, nil
	case o.Stalled != nil:
		if o.Stalled.Retry > 0 {
			return Periodic(o.Stalled.Retry), nil
		}
		return ctrl.Result{}, nil
	}
	return o.Result, nil
}

// Periodic is the result of a step that looks again after a while for
// what no event announces (a remote's new commits, a floating tag moved, a
// stalled object's cause fixed elsewhere): queued at PriorityResync,
// behind people's changes and fan-outs, rather than at the priority of
// the event that brought the object (a person's edit would otherwise be
// polled at PriorityPerson for ever after). A requeue that continues the
// work itself (a soak, a settle time, a race retry) keeps its priority.
func Periodic(after time.Duration) ctrl.Result {
	p := PriorityResync
	return ctrl.Result{RequeueAfter: after, Priority: &p}
}

// MaxLogged bounds the text of an error a reconcile returns: the
// controller logs it on every retry, and it may quote a user's value (an
// object the API server refused) or what a remote sent.
const MaxLogged = 512

// bounded is an error whose text is cut to MaxLogged bytes; errors.Is and
// errors.As still see the whole chain.
type bounded struct{ err error }

func (b bounded) Error() string { return store.Shorten(b.err.Error(), MaxLogged) }
func (b bounded) Unwrap() error { return b.err }

func bound(err error) error {
	if len(err.Error()) <= MaxLogged {
		return err
	}
	return bounded{err}
}

// Expected says whether err is a race a retry resolves by itself: an
// optimistic-lock conflict of the API server, or an error that says so
// (a git compare-and-swap lost: store.ErrConflict); errors joined are
// expected when each is.
func Expected(err error) bool {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		// Several errors: expected only if each is.
		for _, e := range joined.Unwrap() {
			if e != nil && !Expected(e) {
				return false
			}
		}
		return true
	}
	if apierrors.IsConflict(err) {
		return true
	}
	var e interface{ RaceLost() bool }
	return errors.As(err, &e) && e.RaceLost()
}

// RaceRetry is when a reconcile that lost a race runs again: soon, with
// jitter so that the writers that raced do not meet again.
func RaceRetry() time.Duration {
	return 100*time.Millisecond + rand.N(400*time.Millisecond)
}

// Run runs the steps in order over s and stops at the first that returns
// an error.
func Run[S any](ctx context.Context, s S, steps ...Step[S]) Outcome {
	var res ctrl.Result
	for _, step := range steps {
		r, err := step(ctx, s)
		res = merge(res, r)
		if err != nil {
			return Classify(res, err)
		}
	}
	return Outcome{Result: res}
}

// stallRetry is how often an object stalled on an error that says so
// (StallReason) is looked at again.
const stallRetry = 10 * time.Minute

// Classify turns an error into an outcome, the one place errors are
// classified: a *StalledError or *WaitingError anywhere in its chain
// decides; then an error with a WaitReason (waiting with that reason, as
// the package service says of a Repository it cannot open) or a
// StallReason (stalled with that reason); then a remote that did not
// answer (store.RetryAfter: waiting, RepositoryUnavailable, until it may
// have recovered, rather than backing off for minutes); anything else is
// transient. A lost race is told apart later (Expected).
func Classify(res ctrl.Result, err error) Outcome {
	var stalled *StalledError
	var waiting *WaitingError
	var waits interface {
		WaitReason() (string, time.Duration)
	}
	switch {
	case err == nil:
		return Outcome{Result: res}
	case errors.As(err, &stalled):
		return Outcome{Result: res, Stalled: stalled}
	case errors.As(err, &waiting):
		return Outcome{Result: res, Waiting: waiting}
	case errors.As(err, &waits):
		reason, after := waits.WaitReason()
		return Outcome{Result: res, Waiting: &WaitingError{Reason: reason, Message: err.Error(), After: after}}
	}
	var stalls interface{ StallReason() string }
	if errors.As(err, &stalls) {
		// An error that says retrying cannot help (a package over a
		// limit): stalled, looked at again after a while in case what it
		// depends on changed without an event.
		return Outcome{Result: res, Stalled: &StalledError{Reason: stalls.StallReason(), Message: err.Error(), Retry: stallRetry}}
	}
	if after, ok := store.RetryAfter(err); ok {
		return Outcome{Result: res, Waiting: &WaitingError{Reason: porchv1alpha1.RepositoryUnavailableReason, Message: err.Error(), After: after}}
	}
	return Outcome{Result: res, Err: err}
}

// merge keeps the soonest requeue of two results, with its priority.
func merge(a, b ctrl.Result) ctrl.Result {
	switch {
	case a.RequeueAfter == 0:
		return b
	case b.RequeueAfter == 0 || a.RequeueAfter <= b.RequeueAfter:
		return a
	}
	return b
}
