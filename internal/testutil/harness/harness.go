// Package harness lets test helpers that start a server or a process run
// both inside a test (testing.TB) and for a whole test package from
// TestMain, where there is no test to fail or clean up after.
package harness

import (
	"errors"
	"fmt"
	"os"
)

// TB is what such helpers need of a test; testing.TB has it.
type TB interface {
	Helper()
	TempDir() string
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Main runs setup outside a test: a Fatal there ends setup and is
// returned as the error (after the cleanups registered so far ran);
// otherwise stop runs the cleanups, last first.
func Main(setup func(TB)) (stop func(), err error) {
	h := &mainTB{}
	stop = func() {
		for i := len(h.cleanups) - 1; i >= 0; i-- {
			h.cleanups[i]()
		}
	}
	defer func() {
		if f, ok := recover().(failure); ok {
			stop()
			stop, err = nil, errors.New(string(f))
		}
	}()
	setup(h)
	return stop, nil
}

// mainTB is a TB outside a test: Fatal panics with a failure, which
// Main returns as an error.
type mainTB struct{ cleanups []func() }

type failure string

func (h *mainTB) Helper()          {}
func (h *mainTB) Cleanup(f func()) { h.cleanups = append(h.cleanups, f) }
func (h *mainTB) Fatal(args ...any) {
	panic(failure(fmt.Sprint(args...)))
}
func (h *mainTB) Fatalf(format string, args ...any) {
	panic(failure(fmt.Sprintf(format, args...)))
}
func (h *mainTB) TempDir() string {
	dir, err := os.MkdirTemp("", "scion-test")
	if err != nil {
		h.Fatal(err)
	}
	h.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
