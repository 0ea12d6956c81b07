package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/egress"
)

// serveOn serves h on addr (host:0) for the test, counting connections.
func serveOn(t *testing.T, addr string, h http.Handler, tls bool) (string, *atomic.Int32) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int32
	srv := &httptest.Server{Listener: l, Config: &http.Server{Handler: h, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}}}
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv.URL, &conns
}

// repoReady waits for a Repository's Ready condition to be False with a
// reason, and returns its message.
func repoNotReady(g Gomega, ns, name, reason string) string {
	var msg string
	g.Eventually(func(g Gomega) {
		r := &configv1alpha1.Repository{}
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, r)).To(Succeed())
		c := meta.FindStatusCondition(r.Status.Conditions, configv1alpha1.ReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		if reason != "" {
			g.Expect(c.Reason).To(Equal(reason), c.Message)
		}
		msg = c.Message
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
	return msg
}

// A tenant's URLs reach only what the administrator's egress policy
// allows (this suite's: the default deny list, with 127.0.0.1 allowed
// for its git servers): a Repository at another loopback address is
// stalled naming the rule, and nothing connects; a clone from such a
// URL is refused at admission naming the field. What an allowed address
// answers reaches the tenant by its class only: not a service's body
// posing as a registry's error, not a TLS certificate's names.
func TestEgress(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, _ := setup(t)

	denied, conns := serveOn(t, "127.0.0.2:0", http.NotFoundHandler(), false)
	g.Expect(k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "internal", Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: denied + "/admin.git"}}})).To(Succeed())
	msg := repoNotReady(g, ns, "internal", egress.DeniedReason)
	g.Expect(msg).To(ContainSubstring("127.0.0.2 may not be reached from Scion: 127.0.0.2 is in the egress policy's denied range 127.0.0.0/8 (an administrator allows it with --egress-allow)"))
	g.Expect(conns.Load()).To(BeZero(), "nothing connected to the denied address")

	// A clone from it, through Porch's API: refused before anything is
	// stored.
	p := newPorch(t, ns)
	code, out := p.do(http.MethodPost, "packagerevisions", map[string]any{
		"apiVersion": "porch.kpt.dev/v1alpha1", "kind": "PackageRevision",
		"metadata": map[string]any{"name": "cluster-01.stolen.ws", "namespace": ns},
		"spec": map[string]any{"packageName": "stolen", "repository": "cluster-01", "workspaceName": "ws",
			"tasks": []any{map[string]any{"type": "clone", "clone": map[string]any{"upstreamRef": map[string]any{"type": "git",
				"git": map[string]any{"repo": denied + "/admin.git", "ref": "main", "directory": "/"}}}}}},
	})
	g.Expect(code).To(Equal(http.StatusUnprocessableEntity), "%v", out)
	g.Expect(fmt.Sprint(out["message"])).To(ContainSubstring("spec.tasks[0].clone.upstreamRef.git.repo: Forbidden: 127.0.0.2 may not be reached from Scion"))
	g.Expect(conns.Load()).To(BeZero())

	// An allowed address whose service is no registry: its body stays
	// here.
	const secret = "SSRF-SECRET-BODY internal admin token abc123"
	service, _ := serveOn(t, "127.0.0.1:0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = fmt.Fprintf(w, `{"errors":[{"code":"UNKNOWN","message":%q}]}`, secret)
	}), false)
	g.Expect(k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "not-a-registry", Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Type: configv1alpha1.OCIRepositoryType, OCI: &configv1alpha1.OCIRepository{Registry: strings.TrimPrefix(service, "http://") + "/packages"}}})).To(Succeed())
	msg = repoNotReady(g, ns, "not-a-registry", "")
	g.Expect(msg).To(ContainSubstring("the registry answered 500 Internal Server Error"))
	g.Expect(msg).NotTo(ContainSubstring("SSRF-SECRET"))

	// An allowed TLS server: the class, not the certificate's names.
	tlsURL, _ := serveOn(t, "127.0.0.1:0", http.NotFoundHandler(), true)
	g.Expect(k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "tls", Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: tlsURL + "/x.git"}}})).To(Succeed())
	msg = repoNotReady(g, ns, "tls", "")
	g.Expect(msg).To(ContainSubstring("its TLS certificate is not signed by an authority Scion trusts"))
	g.Expect(msg).NotTo(ContainSubstring("example.com"))

	// Nor in events.
	g.Eventually(func(g Gomega) {
		events := &corev1.EventList{}
		g.Expect(k8sClient.List(ctx, events, client.InNamespace(ns))).To(Succeed())
		g.Expect(events.Items).NotTo(BeEmpty())
		for _, e := range events.Items {
			g.Expect(e.Message).NotTo(ContainSubstring("SSRF-SECRET"))
			g.Expect(e.Message).NotTo(ContainSubstring("example.com"))
		}
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
}
