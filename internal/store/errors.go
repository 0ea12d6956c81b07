package store

import (
	"errors"
	"fmt"
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
