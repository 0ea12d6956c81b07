package namedwatch

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/internal/testutil/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{}, func(e *testenv.Env) error {
		env = e
		return nil
	}))
}

func start(t *testing.T, transform func(any) (any, error)) *Reader {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	r := &Reader{Client: c, Transform: transform}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = r.Start(ctx) }()
	NewWithT(t).Eventually(func() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.ctx != nil }).Should(BeTrue())
	return r
}

// A named Secret is served from its own watch: later reads see changes
// without asking the API server, other Secrets of the namespace are never
// held, and a missing one is NotFound until it is created.
func TestReader_secret(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "named")
	for i := range 5 {
		g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("other-%d", i)},
			StringData: map[string]string{"password": "not-read"}})).To(Succeed())
	}
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds", Annotations: map[string]string{"note": "x"}},
		StringData: map[string]string{"password": "one", "unused": "dropped"}}
	g.Expect(env.Client.Create(ctx, creds)).To(Succeed())

	r := start(t, func(o any) (any, error) {
		if s, ok := o.(*corev1.Secret); ok {
			delete(s.Data, "unused")
		}
		return o, nil
	})
	got := &corev1.Secret{}
	g.Expect(r.Get(ctx, client.ObjectKey{Namespace: ns, Name: "creds"}, got)).To(Succeed())
	g.Expect(string(got.Data["password"])).To(Equal("one"))
	g.Expect(got.Data).NotTo(HaveKey("unused"), "the transform trims what is kept")
	g.Expect(r.Watches()).To(Equal(1))

	inf := r.watches[corev1.SchemeGroupVersion.WithKind("Secret").String()+"/"+ns+"/creds"]
	g.Expect(inf).NotTo(BeNil())
	g.Expect(inf.GetStore().ListKeys()).To(ConsistOf(ns+"/creds"), "the watch is narrowed to the one Secret")

	cur := &corev1.Secret{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(creds), cur)).To(Succeed())
	cur.Data["password"] = []byte("two")
	g.Expect(env.Client.Update(ctx, cur)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(r.Get(ctx, client.ObjectKey{Namespace: ns, Name: "creds"}, got)).To(Succeed())
		g.Expect(string(got.Data["password"])).To(Equal("two"))
	}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
	g.Expect(got.ResourceVersion).To(Equal(cur.ResourceVersion), "the version tells a changed Secret")

	err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: "later"}, got)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "later"}, StringData: map[string]string{"bearerToken": "t"}})).To(Succeed())
	g.Eventually(func() error { return r.Get(ctx, client.ObjectKey{Namespace: ns, Name: "later"}, got) }, 10*time.Second, 50*time.Millisecond).Should(Succeed())
	g.Expect(r.Watches()).To(Equal(2))
}

// Cluster-scoped objects (CRDs) are served the same way; past MaxWatches
// and before Start, reads go to the API server.
func TestReader_clusterScopedAndLimits(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	r := start(t, nil)
	r.MaxWatches = 1
	crd := &apiextensionsv1.CustomResourceDefinition{}
	g.Expect(r.Get(ctx, client.ObjectKey{Name: "packagevariants.config.porch.kpt.dev"}, crd)).To(Succeed())
	g.Expect(crd.Spec.Names.Kind).To(Equal("PackageVariant"))
	g.Expect(r.Get(ctx, client.ObjectKey{Name: "repositories.config.porch.kpt.dev"}, crd)).To(Succeed())
	g.Expect(crd.Spec.Names.Kind).To(Equal("Repository"), "read directly past the limit")
	g.Expect(r.Watches()).To(Equal(1))

	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	idle := &Reader{Client: c}
	g.Expect(idle.Get(ctx, client.ObjectKey{Name: "packagevariants.config.porch.kpt.dev"}, crd)).To(Succeed())
	g.Expect(idle.Watches()).To(Equal(0), "not started: no watch")
	g.Expect(idle.List(ctx, &corev1.SecretList{})).To(MatchError(ContainSubstring("not supported")))
}
