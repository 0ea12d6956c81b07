package pkgservice

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
		out := reconciler.Classify(ctrl.Result{}, WaitForRepository("fleet", "tarpit", err))
		g.Expect(out.Waiting).NotTo(BeNil(), "waiting, not a failure")
		g.Expect(out.Waiting.Reason).To(Equal(porchv1alpha1.RepositoryNotReadyReason))
		g.Expect(out.Waiting.Message).To(Equal("repository tarpit is not usable: connection refused"))
		g.Expect(out.Waiting.After).To(Equal(repositoryRetry))
	}
}

// A Repository the namespace does not have is named with the namespace:
// one of another namespace cannot be used.
func TestWaitForRepository_notFoundNamesTheNamespace(t *testing.T) {
	g := NewWithT(t)
	err := apierrors.NewNotFound(schema.GroupResource{Group: "config.porch.kpt.dev", Resource: "repositories"}, "blueprints")
	out := reconciler.Classify(ctrl.Result{}, WaitForRepository("team-a", "blueprints", err))
	g.Expect(out.Waiting).NotTo(BeNil())
	g.Expect(out.Waiting.Reason).To(Equal(porchv1alpha1.RepositoryNotFoundReason))
	g.Expect(out.Waiting.Message).To(Equal("Repository blueprints does not exist in namespace team-a (deleted, or not created yet; a Repository of another namespace cannot be named)"))
}
