package console

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/console"
	"github.com/scion-dev/scion/internal/scheme"
)

// serviceAccount makes a ServiceAccount in ns, bound to role there when
// role is set, and returns a token the API server authenticates it by.
func serviceAccount(t *testing.T, ns, name, role string) string {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	g.Expect(k8sClient.Create(ctx, sa)).To(Succeed())
	if role != "" {
		g.Expect(env.Storage.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + role, Namespace: ns},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}})).To(Succeed())
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	g.Expect(k8sClient.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
	return tr.Status.Token
}

// The console deployed behind an authenticating proxy (--auth=bearer):
// each request acts as the person whose token it carries, as the API
// server authenticates it and RBAC allows it; the console's own service
// account (no role at all) is never used for what a person does; a
// request without a token is refused.
func TestConsoleBearer(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns, drafts := proposedFleet(t)
	own := serviceAccount(t, ns, "console", "")
	alice := serviceAccount(t, ns, "alice", "scion-approver")
	vera := serviceAccount(t, ns, "vera", "scion-viewer")
	nobody := serviceAccount(t, ns, "nobody", "")

	// The console's own configuration: the API server's address and CA,
	// and its service account's token (what it has in a pod).
	cfg := &rest.Config{Host: env.Config.Host, BearerToken: own, TLSClientConfig: rest.TLSClientConfig{CAData: env.Config.CAData}}
	cfg, err := console.BearerConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	g.Expect(err).NotTo(HaveOccurred())
	s, err := console.New(console.Options{Client: c, Namespace: ns, Bearer: true})
	g.Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewServer(s)
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close(); s.Close() })

	// A browser session behind the proxy: the proxy adds the token.
	as := func(token string) (*http.Client, func(method, path string, form url.Values) (int, string)) {
		jar, _ := cookiejar.New(nil)
		hc := &http.Client{Jar: jar, Timeout: time.Minute}
		return hc, func(method, path string, form url.Values) (int, string) {
			t.Helper()
			req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(form.Encode()))
			g.Expect(err).NotTo(HaveOccurred())
			if form != nil {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			res, err := hc.Do(req)
			g.Expect(err).NotTo(HaveOccurred())
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			return res.StatusCode, string(body)
		}
	}

	// No token: refused, and told why.
	_, anon := as("")
	code, body := anon("GET", "/proposals", nil)
	g.Expect(code).To(Equal(http.StatusUnauthorized))
	g.Expect(body).To(ContainSubstring("needs their Kubernetes bearer token"))

	// Someone with no role: who they are, and Kubernetes' refusal (not
	// the console's own identity, which has no role either).
	_, nob := as(nobody)
	code, body = nob("GET", "/proposals?set=app", nil)
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(body).To(ContainSubstring("acting as <b>system:serviceaccount:" + ns + ":nobody</b>"))
	g.Expect(body).To(MatchRegexp(`forbidden: User &#34;system:serviceaccount:` + ns + `:nobody&#34; cannot`))

	// A viewer sees the proposals but may not approve them.
	csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)
	_, view := as(vera)
	code, body = view("GET", "/proposals?set=app", nil)
	g.Expect(code).To(Equal(http.StatusOK))
	g.Expect(body).To(ContainSubstring("acting as <b>system:serviceaccount:" + ns + ":vera</b>"))
	g.Expect(body).To(ContainSubstring(drafts[0]))
	m := csrf.FindStringSubmatch(body)
	g.Expect(m).To(HaveLen(2))
	_, body = view("POST", "/revisions", url.Values{"csrf": {m[1]}, "verb": {"approve"}, "revision": {drafts[0]}})
	g.Expect(body).To(MatchRegexp(`system:serviceaccount:` + ns + `:vera.*forbidden|forbidden.*system:serviceaccount:` + ns + `:vera`))
	pr := &porchv1alpha1.PackageRevision{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: drafts[0]}, pr)).To(Succeed())
	g.Expect(pr.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecycleProposed))

	// An approver's approval publishes, recorded as them.
	_, appr := as(alice)
	_, body = appr("GET", "/proposals?set=app", nil)
	m = csrf.FindStringSubmatch(body)
	g.Expect(m).To(HaveLen(2))
	_, body = appr("POST", "/revisions", url.Values{"csrf": {m[1]}, "verb": {"approve"}, "revision": {drafts[0]}})
	g.Expect(body).To(ContainSubstring(drafts[0] + " is Published"))
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: drafts[0]}, pr)).To(Succeed())
	g.Expect(pr.Annotations).To(HaveKeyWithValue(porchv1alpha1.ApprovedByAnnotation, "system:serviceaccount:"+ns+":alice"))

	// The pages of two people are their own: the viewer's targets table
	// and the nobody's refusal, side by side.
	_, body = view("GET", "/targets?package=app", nil)
	g.Expect(body).To(ContainSubstring("cluster-01"))
	_, body = nob("GET", "/targets?package=app", nil)
	g.Expect(body).To(ContainSubstring("listing PackageRevisions"))
	g.Expect(body).To(ContainSubstring("forbidden"))
}
