package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/notify"
)

// Notifications: a variant that stalls and a revision proposed reach the
// namespace's webhook once each, Slack-compatible; a failed delivery is
// tried again; a namespace whose endpoint hangs holds up no other
// namespace's notifications; what is already so when the controller
// starts is not sent again (a restart), and a namespace without the
// Secret sends nothing.
func TestNotifications(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, _ := setup(t)
	hanging, _, _ := setup(t)

	var mu sync.Mutex
	var received []string
	attempts := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		attempts++
		if attempts == 1 {
			http.Error(w, "not now", http.StatusInternalServerError) // tried again
			return
		}
		var msg struct{ Text string }
		g.Expect(json.Unmarshal(body, &msg)).To(Succeed())
		received = append(received, msg.Text)
	}))
	t.Cleanup(srv.Close)
	stop := make(chan struct{})
	var hangCalls atomic.Int32
	hang := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		hangCalls.Add(1)
		<-stop
	}))
	t.Cleanup(func() { close(stop); hang.Close() })
	for n, s := range map[string]map[string][]byte{
		ns:      {notify.AddressKey: []byte(srv.URL), notify.FormatKey: []byte("slack")},
		hanging: {notify.AddressKey: []byte(hang.URL)},
	} {
		g.Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: notify.SecretName}, Data: s})).To(Succeed())
	}
	got := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), received...)
	}

	// A variant whose upstream revision does not exist stalls, in both
	// namespaces (the hanging endpoint's first).
	variant := func(n string) *configv1alpha1.PackageVariant {
		return &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "missing"},
			Spec: configv1alpha1.PackageVariantSpec{Upstream: &configv1alpha1.Upstream{Repo: "catalog", Package: "base", Revision: "7"},
				Downstream: &configv1alpha1.Downstream{Repo: "cluster-01", Package: "base"}}}
	}
	g.Expect(k8sClient.Create(ctx, variant(hanging))).To(Succeed())
	g.Eventually(hangCalls.Load, time.Minute, 100*time.Millisecond).Should(BeNumerically(">=", 1), "the hanging endpoint is being sent to")
	_, err := scion(ns, "rpkg", "init", "base", "--repository", "catalog", "--workspace", "v1")
	g.Expect(err).NotTo(HaveOccurred())
	pv := variant(ns)
	g.Expect(k8sClient.Create(ctx, pv)).To(Succeed())
	g.Eventually(got, time.Minute, 100*time.Millisecond).Should(ContainElement(
		HavePrefix("[Stalled] PackageVariant " + ns + "/missing stalled (UpstreamNotFound): spec.upstream.revision: Repository catalog has no revision 7 of package base")))
	_, err = scion(ns, "rpkg", "propose", "catalog.base.v1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(got, time.Minute, 100*time.Millisecond).Should(ContainElement(
		HavePrefix("[AwaitingApproval] PackageRevision " + ns + "/catalog.base.v1 (package base in repository catalog) was proposed by ")))

	// Once each: the objects change again (a label), nothing more is
	// sent; the first delivery failed and was tried again.
	cur := &configv1alpha1.PackageVariant{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pv), cur)).To(Succeed())
	cur.Labels = map[string]string{"touched": "yes"}
	g.Expect(k8sClient.Update(ctx, cur)).To(Succeed())
	g.Consistently(func() int { return len(got()) }, 2*time.Second, 100*time.Millisecond).Should(Equal(2))
	mu.Lock()
	g.Expect(attempts).To(Equal(3), "one failed attempt, two deliveries")
	mu.Unlock()

	// What is so when a notifier starts is taken as sent (a restart).
	n := &notify.Notifier{Secrets: k8sClient, HTTP: http.DefaultClient, Elected: closed()}
	started, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go func() { _ = n.Start(started) }()
	g.Eventually(func() bool { return n.Started() }).Should(BeTrue())
	g.Expect(notify.Events(cur)).To(HaveLen(1))
	handler := n.Handler()
	handler.OnAdd(cur, true)
	handler.OnUpdate(cur, cur)
	g.Consistently(func() int { return len(got()) }, time.Second, 100*time.Millisecond).Should(Equal(2))
}

func closed() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// A rollout wave waiting for approval reaches the namespace's webhook, as
// generic JSON.
func TestNotifications_rolloutWave(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, _ := setup(t)
	var mu sync.Mutex
	var received []notify.Event
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		var e notify.Event
		g.Expect(json.NewDecoder(r.Body).Decode(&e)).To(Succeed())
		mu.Lock()
		defer mu.Unlock()
		received = append(received, e)
	}))
	t.Cleanup(srv.Close)
	g.Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: notify.SecretName},
		Data: map[string][]byte{notify.AddressKey: []byte(srv.URL), notify.FormatKey: []byte("generic")}})).To(Succeed())
	run := func(args ...string) {
		t.Helper()
		out, err := scion(ns, args...)
		g.Expect(err).NotTo(HaveOccurred(), "scion %v: %s", args, out)
	}
	run("rpkg", "init", "app", "--repository", "catalog", "--workspace", "v1")
	run("rpkg", "propose", "catalog.app.v1")
	run("rpkg", "clone", "catalog.app.v1", "app", "--repository", "cluster-01", "--workspace", "v1")
	g.Eventually(func() error {
		_, err := scion(ns, "rpkg", "propose", "cluster-01.app.v1")
		return err
	}).Should(Succeed())
	pr := &porchv1alpha1.PackageRevision{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cluster-01.app.v1"}, pr)).To(Succeed())
	pr.Labels = map[string]string{"release": "r1"}
	g.Expect(k8sClient.Update(ctx, pr)).To(Succeed())
	g.Expect(k8sClient.Create(ctx, &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Name: "r1", Namespace: ns}, Spec: configv1alpha1.PackageRolloutSpec{
		RevisionSelector: metav1.LabelSelector{MatchLabels: map[string]string{"release": "r1"}},
		Waves:            []configv1alpha1.RolloutWave{{Name: "canary", MaxTargets: ptr.To[int32](1)}},
		Approval:         configv1alpha1.RolloutApprovalManual,
	}})).To(Succeed())
	g.Eventually(func() []notify.Event {
		mu.Lock()
		defer mu.Unlock()
		return append([]notify.Event(nil), received...)
	}, time.Minute, 100*time.Millisecond).Should(ContainElement(And(
		HaveField("Kind", "PackageRollout"), HaveField("Namespace", ns), HaveField("Name", "r1"), HaveField("Reason", "AwaitingApproval"),
		HaveField("Message", "PackageRollout "+ns+"/r1: wave canary (1 revisions) waits for approval"))))
}
