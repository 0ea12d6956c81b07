package pkgservice

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/scion-dev/scion/internal/reconciler"
)

// The Repository is named once in the message, whether or not the error
// named it already.
func TestWaitForRepository_namesTheRepositoryOnce(t *testing.T) {
	g := NewWithT(t)
	cause := errors.New("connection refused")
	for _, err := range []error{cause, fmt.Errorf("repository tarpit: %w", cause)} {
		var w *reconciler.WaitingError
		g.Expect(errors.As(WaitForRepository("tarpit", err), &w)).To(BeTrue())
		g.Expect(w.Message).To(Equal("repository tarpit is not usable: connection refused"))
	}
}
