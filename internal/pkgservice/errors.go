package pkgservice

import (
	"fmt"
	"time"
)

// WaitError says that the caller waits for something outside its object
// (a Repository that does not exist yet, a remote that does not answer):
// internal/reconciler classifies it as waiting with Reason, looked at again
// after After (through WaitReason), never as a failure.
type WaitError struct {
	Reason, Message string
	After           time.Duration
}

// Error implements error.
func (e *WaitError) Error() string { return e.Message }

// WaitReason says why the caller waits and when it looks again.
func (e *WaitError) WaitReason() (string, time.Duration) { return e.Reason, e.After }

func wait(after time.Duration, reason, format string, args ...any) *WaitError {
	return &WaitError{Reason: reason, Message: fmt.Sprintf(format, args...), After: after}
}

// SpecError says that the caller's spec names something that cannot be
// used as named (an upstream revision git does not have): the caller is
// stalled with Reason until its spec changes (internal/reconciler
// classifies it through StallReason, and looks again after a while).
type SpecError struct {
	Reason, Message string
}

// Error implements error.
func (e *SpecError) Error() string { return e.Message }

// StallReason is the reason the caller is stalled with.
func (e *SpecError) StallReason() string { return e.Reason }
