package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/scion-dev/scion/internal/egress"
)

var (
	// ErrConflict is matched (errors.Is) by errors from a ref update that
	// lost a race: the ref no longer had the value the writer read.
	ErrConflict error = lostRace{}
	// ErrNotFound is matched by errors about a revision, package or ref
	// that does not exist.
	ErrNotFound = errors.New("not found")
	// ErrAuthentication is matched by errors from a remote that refused
	// the credentials.
	ErrAuthentication = errors.New("authentication failed")
	// ErrRepositoryNotFound is matched when the remote repository does not
	// exist.
	ErrRepositoryNotFound = errors.New("repository not found")
	// ErrBranchNotFound is matched when the configured branch does not
	// exist and createBranch is off.
	ErrBranchNotFound = errors.New("branch not found")
	// ErrTimeout is matched when the remote did not answer within the
	// repository's timeout.
	ErrTimeout = errors.New("timed out")
	// ErrReadOnly is matched by errors from a write to a repository
	// opened with Options.ReadOnly.
	ErrReadOnly = errors.New("read only")
	// ErrUnknownCommit is matched by errors about a commit the local
	// copy does not have (not fetched, or not in the repository).
	ErrUnknownCommit = errors.New("commit not known")
)

// ConflictError says which ref changed under a writer.
type ConflictError struct {
	// Ref is the full ref name.
	Ref string
	// Expected is the value the writer read; empty means "absent".
	Expected string
	// Actual is the value found; empty means "absent". It may be unknown
	// (empty) when the server rejected the update without saying why.
	Actual string
	// Detail is the server's reason, if any.
	Detail string
}

func (e *ConflictError) Error() string {
	show := func(h string) string {
		if h == "" {
			return "absent"
		}
		return short(h)
	}
	msg := "conflict: " + e.Ref + " changed concurrently"
	// Actual is known when the advertisement showed it; a rejection by the
	// server (Detail) may leave it unknown.
	actualKnown := e.Actual != "" || e.Detail == ""
	switch {
	case actualKnown:
		msg += fmt.Sprintf(" (expected %s, found %s)", show(e.Expected), show(e.Actual))
	case e.Expected != "":
		msg += fmt.Sprintf(" (expected %s)", show(e.Expected))
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg + "; re-read and retry"
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// RaceLost says the error is a lost race, which a retry that reads again
// resolves (reconciler.Expected).
func (e *ConflictError) RaceLost() bool { return true }

// lostRace is ErrConflict.
type lostRace struct{}

func (lostRace) Error() string  { return "conflict" }
func (lostRace) RaceLost() bool { return true }

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// TextError is an error with a message of its own (shortened, scrubbed of
// secrets, naming only the class of what a remote answered), wrapping
// the original: errors.Is and errors.As still see the cause. The one such
// wrapper of git and registry errors.
type TextError struct {
	Msg string
	Err error
}

// Error is the message.
func (e *TextError) Error() string { return e.Msg }

// Unwrap is the cause.
func (e *TextError) Unwrap() error { return e.Err }

// Remote is a remote an exchange was with (a git server, an OCI
// registry) as its errors name it. Classify gives every store's remote
// errors the same meaning and shape; Known and Text are what differs
// between kinds of remote.
type Remote struct {
	// Noun is what the remote is called in messages: "remote",
	// "registry".
	Noun string
	// URL is the remote's address, without credentials.
	URL string
	// Timeout is how long one exchange may take.
	Timeout time.Duration
	// Known gives the errors only this kind of remote returns their
	// meaning (nil: not one of those).
	Known func(op string, err error) error
	// Text is the message of any other error: short, without secrets,
	// and never a body the remote sent as it came (a tenant's URL may
	// lead to a service that is no remote of this kind).
	Text func(err error) string
}

// Classify gives err, from the exchange op with the remote, the store's
// meaning, each message naming op and the remote: a LimitError is
// itself; a timeout is ErrTimeout (the gate backs off); then what Known
// knows; a connection's failure is its class only (what answered, a
// certificate's names, stays on the server); anything else is Text. The
// messages of Scion's own wrap err: errors.Is and errors.As still see
// the cause.
func (r Remote) Classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var over *LimitError
	switch {
	case errors.As(err, &over):
		return over
	case errors.Is(err, context.DeadlineExceeded):
		return r.TimedOut(op)
	}
	if r.Known != nil {
		if known := r.Known(op, err); known != nil {
			return known
		}
	}
	if class := egress.Class(err); class != "" {
		return &TextError{Msg: fmt.Sprintf("%s %s: %s", op, r.URL, class), Err: err}
	}
	return &TextError{Msg: fmt.Sprintf("%s %s: %s", op, r.URL, r.Text(err)), Err: err}
}

// TimedOut is the error of the exchange op, which the remote did not
// answer within its timeout: ErrTimeout.
func (r Remote) TimedOut(op string) error {
	return fmt.Errorf("%s %s: the %s did not answer within %s: %w", op, r.URL, r.Noun, r.Timeout, ErrTimeout)
}
