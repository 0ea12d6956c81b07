package apiserver_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/api/porch/v1alpha1/content"
	"github.com/scion-dev/scion/internal/apiserver"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

// An installation of an earlier version upgrades: what only its
// PackageRevision objects held (a person's label, a condition, a pending
// approval) is copied into the storage, Scion's API server then serves
// it as porch.kpt.dev, and deleting the old CustomResourceDefinition
// leaves the API server in place.
func TestMigrate_fromTheCRD(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	old, err := testenv.StartWith(testenv.Options{Earlier: true})
	g.Expect(err).NotTo(HaveOccurred())
	defer old.Stop()
	ns := old.Namespace(t, "upgrade")
	pr := &porchv1alpha1.PackageRevision{ObjectMeta: metav1.ObjectMeta{Name: "deploy.app.v1", Namespace: ns, Labels: map[string]string{"team": "web"}},
		Spec: porchv1alpha1.PackageRevisionSpec{Repository: "deploy", PackageName: "app", WorkspaceName: "v1", Lifecycle: porchv1alpha1.LifecycleDraft}}
	g.Expect(old.Client.Create(ctx, pr)).To(Succeed(), "the earlier version's CustomResourceDefinition serves porch.kpt.dev")
	pr.Status.Conditions = []porchv1alpha1.Condition{{Type: "example.com/checked", Status: "True", Reason: "Checked"}}
	g.Expect(old.Client.Status().Update(ctx, pr)).To(Succeed())

	dc, err := discovery.NewDiscoveryClientForConfig(old.Config)
	g.Expect(err).NotTo(HaveOccurred())
	got, err := apiserver.Migrate(ctx, dc, old.Client, old.Storage)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(apiserver.Migrated{Copied: 1}))
	got, err = apiserver.Migrate(ctx, dc, old.Client, old.Storage)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(apiserver.Migrated{Present: 1}), "a second run copies nothing")

	// The new version's API server: the copy, through porch.kpt.dev.
	g.Expect(old.RunAPIServer()).To(Succeed())
	check := func() {
		served := &porchv1alpha1.PackageRevision{}
		g.Expect(old.Client.Get(ctx, client.ObjectKeyFromObject(pr), served)).To(Succeed())
		g.Expect(served.Labels).To(HaveKeyWithValue("team", "web"))
		g.Expect(served.Status.Conditions).To(ConsistOf(HaveField("Type", "example.com/checked")))
		err := old.Client.Get(ctx, client.ObjectKeyFromObject(pr), &content.PackageRevisionResources{})
		g.Expect(apierrors.IsNotFound(err) || apierrors.IsServiceUnavailable(err)).To(BeTrue(), "served by Scion's API server (no Repository here): %v", err)
	}
	check()
	_, err = apiserver.Migrate(ctx, dc, old.Client, old.Storage)
	g.Expect(err).To(MatchError(apiserver.ErrAlreadyServed))

	// The old definition goes; the API server stays.
	g.Expect(old.Storage.Delete(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "packagerevisions.porch.kpt.dev"}})).To(Succeed())
	g.Consistently(func(g Gomega) {
		served := &porchv1alpha1.PackageRevision{}
		g.Expect(old.Client.Get(ctx, client.ObjectKeyFromObject(pr), served)).To(Succeed())
	}, "5s", "500ms").Should(Succeed())
	check()
}
