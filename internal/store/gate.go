package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/scion-dev/scion/internal/egress"
)

// Gate defaults.
const (
	// DefaultBusyAfter is how long an exchange with a remote may run
	// before the callers waiting behind it give up with ErrBusy.
	DefaultBusyAfter = 5 * time.Second
	// DefaultBackoff is the first pause after a remote failed to answer;
	// it doubles with each failure in a row, up to MaxBackoff.
	DefaultBackoff = 5 * time.Second
	// MaxBackoff bounds the pause after failures in a row.
	MaxBackoff = 5 * time.Minute
)

// Gate admits a repository's exchanges with its remote (fetches and
// pushes) one at a time, so that a slow or dead remote costs its callers
// little and nobody else anything:
//
//   - one exchange runs at a time; the others wait, but only while it is
//     young: once it has run for BusyAfter, they fail with ErrBusy (the
//     caller comes back later) instead of holding a worker for up to the
//     timeout;
//   - after an exchange fails because the remote did not answer (a timeout,
//     a refused or reset connection), exchanges fail at once with
//     ErrUnavailable until a backoff has passed (5s, doubling with each
//     failure in a row, up to 5m), so probing a dead remote costs one
//     caller per backoff.
//
// A Gate outlives the Repository it admits exchanges for when the caller
// passes it in Options.Gate: the repository cache keeps one per
// Repository object, so reopening does not reset the backoff.
type Gate struct {
	// BusyAfter is DefaultBusyAfter when zero.
	BusyAfter time.Duration
	// Backoff is DefaultBackoff when zero.
	Backoff time.Duration

	slot chan struct{}
	once sync.Once

	mu       sync.Mutex
	since    time.Time // start of the exchange under way; zero when none
	failures int       // in a row
	retryAt  time.Time
	lastErr  error
}

// ErrBusy is matched when a caller gave up waiting behind a slow exchange
// with the same remote (or a slow open of the same repository): it should
// come back later rather than hold a worker.
var ErrBusy = errors.New("repository busy")

// ErrUnavailable is matched while a remote that recently failed to answer
// is left alone; UnavailableError says until when.
var ErrUnavailable = errors.New("remote unavailable")

// UnavailableError is returned, without contacting the remote, while a
// Gate backs off after the remote failed to answer.
type UnavailableError struct {
	// RetryAt is when the next exchange may be tried.
	RetryAt time.Time
	// Failures in a row so far.
	Failures int
	// Err is the last failure.
	Err error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("%v (%d failure(s) in a row; not tried again before %s)", e.Err, e.Failures, e.RetryAt.UTC().Format(time.TimeOnly))
}

// Unwrap makes errors.Is see both ErrUnavailable and the last failure
// (such as ErrTimeout).
func (e *UnavailableError) Unwrap() []error { return []error{ErrUnavailable, e.Err} }

// RetryAfter says when a caller should come back after a remote error
// that is no fault of the request: soon when it waited behind a slow
// exchange (ErrBusy), after the backoff when the remote is left alone
// (ErrUnavailable), and after a short pause when it timed out or could
// not connect. ok is false for every other error.
func RetryAfter(err error) (after time.Duration, ok bool) {
	var ue *UnavailableError
	switch {
	case errors.As(err, &ue):
		return max(time.Until(ue.RetryAt), time.Second), true
	case errors.Is(err, ErrBusy):
		return 2 * time.Second, true
	case unreachable(err):
		return DefaultBackoff, true
	}
	return 0, false
}

func (g *Gate) init() {
	g.once.Do(func() { g.slot = make(chan struct{}, 1) })
}

func (g *Gate) busyAfter() time.Duration {
	if g.BusyAfter > 0 {
		return g.BusyAfter
	}
	return DefaultBusyAfter
}

// Enter waits for the remote, and returns the function that ends the
// exchange with its result (which starts or ends the backoff): for a
// store other than git's, such as an OCI registry, that shares the
// gate's rules. what names the remote in errors.
func (g *Gate) Enter(ctx context.Context, what string) (func(error), error) {
	return g.enter(ctx, what)
}

// enter waits for the remote, and returns the function that ends the
// exchange with its result. what names the remote in errors.
func (g *Gate) enter(ctx context.Context, what string) (func(error), error) {
	g.init()
	if err := g.backingOff(); err != nil {
		return nil, err
	}
	select {
	case g.slot <- struct{}{}:
	default:
		if err := g.wait(ctx, what); err != nil {
			return nil, err
		}
	}
	// The exchange waited for may have failed meanwhile.
	if err := g.backingOff(); err != nil {
		<-g.slot
		return nil, err
	}
	g.mu.Lock()
	g.since = time.Now()
	g.mu.Unlock()
	return g.exit, nil
}

// wait takes the slot once the exchange under way ends, unless it runs
// for longer than BusyAfter.
func (g *Gate) wait(ctx context.Context, what string) error {
	for {
		g.mu.Lock()
		since := g.since
		g.mu.Unlock()
		if since.IsZero() {
			since = time.Now() // the holder is just starting
		}
		left := time.Until(since.Add(g.busyAfter()))
		running := time.Since(since).Round(time.Second)
		if left <= 0 {
			return fmt.Errorf("%s: another exchange with the remote has been running for %s: %w", what, running, ErrBusy)
		}
		timer := time.NewTimer(left)
		select {
		case g.slot <- struct{}{}:
			timer.Stop()
			return nil
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}

// mark records that a new exchange starts within the holder's turn (a
// writer pushing batch after batch, a publish retrying): slowness is that
// of one exchange, not of the turn.
func (g *Gate) mark() {
	g.mu.Lock()
	if !g.since.IsZero() {
		g.since = time.Now()
	}
	g.mu.Unlock()
}

// slow says whether the exchange under way has run for longer than
// BusyAfter.
func (g *Gate) slow() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.since.IsZero() && time.Since(g.since) >= g.busyAfter()
}

// backingOff returns an UnavailableError while the backoff lasts.
func (g *Gate) backingOff() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failures == 0 || !time.Now().Before(g.retryAt) {
		return nil
	}
	return &UnavailableError{RetryAt: g.retryAt, Failures: g.failures, Err: g.lastErr}
}

// exit ends an exchange: a remote that did not answer starts or extends
// the backoff; any answer ends it.
func (g *Gate) exit(err error) {
	g.mu.Lock()
	g.since = time.Time{}
	switch {
	case unreachable(err) || errors.Is(err, ErrLimit):
		// A remote that sent more than it may is paused like one that
		// does not answer: fetching again at once would fill the disk
		// again.
		g.failures++
		pause := g.Backoff
		if pause <= 0 {
			pause = DefaultBackoff
		}
		for i := 1; i < g.failures && pause < MaxBackoff; i++ {
			pause *= 2
		}
		g.retryAt, g.lastErr = time.Now().Add(min(pause, MaxBackoff)), err
	case err == nil || !errors.Is(err, context.Canceled):
		g.failures, g.lastErr = 0, nil
	}
	g.mu.Unlock()
	<-g.slot
}

// unreachable says whether an error means the remote did not answer: a
// timeout, or a connection refused, reset or not made.
func unreachable(err error) bool {
	if err == nil {
		return false
	}
	var op *net.OpError
	var denied *egress.DeniedError
	if errors.As(err, &denied) {
		return false // refused here, by policy: waiting does not help
	}
	return errors.Is(err, ErrTimeout) || errors.As(err, &op) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}
