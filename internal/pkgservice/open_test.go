package pkgservice

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/reconciler"
)

// The Repository is named once in the message, whether or not the error
// named it already.
func TestWaitForRepository_namesTheRepositoryOnce(t *testing.T) {
	g := NewWithT(t)
	cause := errors.New("connection refused")
	for _, err := range []error{cause, fmt.Errorf("repository tarpit: %w", cause)} {
		out := reconciler.Classify(ctrl.Result{}, WaitForRepository("tarpit", err))
		g.Expect(out.Waiting).NotTo(BeNil(), "waiting, not a failure")
		g.Expect(out.Waiting.Reason).To(Equal(porchv1alpha1.RepositoryNotReadyReason))
		g.Expect(out.Waiting.Message).To(Equal("repository tarpit is not usable: connection refused"))
		g.Expect(out.Waiting.After).To(Equal(repositoryRetry))
	}
}
