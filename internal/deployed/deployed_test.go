package deployed

import (
	"context"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

func TestParseRevision(t *testing.T) {
	commit := strings.Repeat("ab", 20)
	digest := "sha256:" + strings.Repeat("cd", 32)
	for _, tc := range []struct {
		in      string
		want    SourceRevision
		wantErr bool
	}{
		{in: "main@sha1:" + commit, want: SourceRevision{Ref: "main", ID: commit}},
		{in: "refs/heads/release/1@sha1:" + commit, want: SourceRevision{Ref: "refs/heads/release/1", ID: commit}},
		{in: "sha1:" + commit, want: SourceRevision{ID: commit}},
		{in: "v3@" + digest, want: SourceRevision{Ref: "v3", ID: digest}},
		{in: digest, want: SourceRevision{ID: digest}},
		{in: "main/" + commit, want: SourceRevision{Ref: "main", ID: commit}},
		{in: "main@sha1:not-hex", wantErr: true},
		{in: "main@md5:" + commit, wantErr: true},
		{in: "", wantErr: true},
		{in: "latest", wantErr: true},
	} {
		got, err := ParseRevision(tc.in)
		if tc.wantErr {
			if err == nil {
				t.Errorf("ParseRevision(%q) = %+v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseRevision(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

// Judge names the published revision a Kustomization runs by content,
// and says why it is not Current.
func TestJudge(t *testing.T) {
	c1, c2, c3, other := strings.Repeat("1", 40), strings.Repeat("2", 40), strings.Repeat("3", 40), strings.Repeat("f", 40)
	published := []Published{{Package: "app", Revision: 2, ID: c2}, {Package: "app", Revision: 1, ID: c1}}
	// c3 is a later commit of the branch with revision 2's package (another
	// package was published after it); other is a commit no revision has.
	contentOf := map[string]string{c1: "one", c2: "two", c3: "two", strings.Repeat("4", 40): "hand-made"}
	match := func(_ context.Context, applied SourceRevision, rev Published) (bool, error) {
		got, ok := contentOf[applied.ID]
		if !ok {
			return false, ErrUnknownSource
		}
		return got == contentOf[rev.ID], nil
	}
	ready := func(applied string) *Kustomization {
		return &Kustomization{Namespace: "flux-system", Name: "c1", Generation: 3, ObservedGeneration: 3, Waits: true, Ready: metav1.ConditionTrue, LastAppliedRevision: applied}
	}
	for _, tc := range []struct {
		name     string
		k        *Kustomization
		state    configv1alpha1.DeployState
		revision int
		message  string
	}{
		{name: "not found", k: nil, state: configv1alpha1.DeployNotDeployed, message: "no Kustomization"},
		{name: "current", k: ready("main@sha1:" + c2), state: configv1alpha1.DeployCurrent, revision: 2},
		{name: "current at a later commit of the branch", k: ready("main@sha1:" + c3), state: configv1alpha1.DeployCurrent, revision: 2},
		{name: "behind", k: ready("main@sha1:" + c1), state: configv1alpha1.DeployBehind, revision: 1, message: "revision 2 is published"},
		{name: "unknown commit", k: ready("main@sha1:" + other), state: configv1alpha1.DeployDrifted, message: "not in the repository"},
		{name: "content never published", k: ready("main@sha1:" + strings.Repeat("4", 40)), state: configv1alpha1.DeployDrifted, message: "never published"},
		{name: "garbage revision", k: ready("whatever"), state: configv1alpha1.DeployDrifted, message: "not REF@sha1"},
		{name: "failed", k: func() *Kustomization {
			k := ready("main@sha1:" + c1)
			k.Ready, k.ReadyReason, k.ReadyText, k.LastAttemptedRevision = metav1.ConditionFalse, "HealthCheckFailed", "Deployment/app/web status: 'Failed'", "main@sha1:"+c2
			return k
		}(), state: configv1alpha1.DeployFailed, revision: 1, message: "Ready=False HealthCheckFailed: Deployment/app/web"},
		{name: "progressing", k: func() *Kustomization {
			k := ready("main@sha1:" + c1)
			k.Ready, k.ReadyText = metav1.ConditionUnknown, "Reconciliation in progress"
			return k
		}(), state: configv1alpha1.DeployProgressing, revision: 1, message: "Reconciliation in progress"},
		{name: "spec not observed", k: func() *Kustomization {
			k := ready("main@sha1:" + c2)
			k.Generation = 4
			return k
		}(), state: configv1alpha1.DeployProgressing, revision: 2, message: "latest spec"},
		{name: "suspended", k: func() *Kustomization {
			k := ready("main@sha1:" + c2)
			k.Suspended = true
			return k
		}(), state: configv1alpha1.DeployDrifted, revision: 2, message: "suspended"},
		{name: "nothing applied yet", k: func() *Kustomization {
			k := ready("")
			k.Ready = ""
			return k
		}(), state: configv1alpha1.DeployProgressing, message: "no Ready condition yet"},
		{name: "current without wait", k: func() *Kustomization {
			k := ready("main@sha1:" + c2)
			k.Waits = false
			return k
		}(), state: configv1alpha1.DeployCurrent, revision: 2, message: "does not wait"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			v, err := Judge(context.Background(), tc.k, published, match)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(v.State).To(Equal(tc.state), v.Message)
			g.Expect(v.Revision).To(Equal(tc.revision))
			g.Expect(v.Latest).To(Equal(2))
			g.Expect(v.Message).To(ContainSubstring(tc.message))
		})
	}
	t.Run("an error reading the repository is returned", func(t *testing.T) {
		boom := errors.New("boom")
		_, err := Judge(context.Background(), ready("main@sha1:"+c1), published, func(context.Context, SourceRevision, Published) (bool, error) { return false, boom })
		NewWithT(t).Expect(err).To(MatchError(boom))
	})
}

// A tenant writes the kubeconfig: what would run a program, read the
// controller's files or skip verifying the server is refused, naming it.
func TestRESTConfig(t *testing.T) {
	base := func(cluster, user string) string {
		return "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://10.0.0.1:6443\n" + cluster +
			"users:\n- name: u\n  user:\n" + user + "contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
	}
	for _, tc := range []struct {
		name, cluster, user, want string
	}{
		{name: "token", user: "    token: abc\n"},
		{name: "exec", user: "    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: [-c, id]}\n", want: "exec (a program to run)"},
		{name: "token file", user: "    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token\n", want: "paths to files"},
		{name: "client key file", user: "    client-key: /etc/key.pem\n    client-certificate: /etc/cert.pem\n", want: "paths to files"},
		{name: "CA file", cluster: "    certificate-authority: /etc/ssl/ca.pem\n", user: "    token: abc\n", want: "paths to files"},
		{name: "insecure", cluster: "    insecure-skip-tls-verify: true\n", user: "    token: abc\n", want: "insecure-skip-tls-verify"},
		{name: "auth provider", user: "    auth-provider: {name: oidc}\n", want: "auth-provider"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			cfg, err := RESTConfig([]byte(base(tc.cluster, tc.user)))
			if tc.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(cfg.Host).To(Equal("https://10.0.0.1:6443"))
				g.Expect(cfg.BearerToken).To(Equal("abc"))
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
			g.Expect(errors.Is(err, ErrKubeConfig)).To(BeTrue())
		})
	}
	_, err := RESTConfig([]byte("not: [a kubeconfig"))
	NewWithT(t).Expect(errors.Is(err, ErrKubeConfig)).To(BeTrue())
	_, err = RESTConfig([]byte("apiVersion: v1\nkind: Config\ncurrent-context: nowhere\n"))
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring(`no current context "nowhere"`)))
}

// Healthy counts a target healthy only when its cluster runs that very
// revision, Ready, and the Kustomization waits for health.
func TestHealthy(t *testing.T) {
	repo := func(p *configv1alpha1.DeployedPackage, errText string) *configv1alpha1.Repository {
		r := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "cluster-01"}, Spec: configv1alpha1.RepositorySpec{Cluster: &configv1alpha1.TargetCluster{}}}
		r.Status.Cluster = &configv1alpha1.ClusterStatus{Error: errText}
		if p != nil {
			r.Status.Cluster.Packages = []configv1alpha1.DeployedPackage{*p}
		}
		return r
	}
	ok := &configv1alpha1.DeployedPackage{Package: "app", Kustomization: "flux-system/c1", State: configv1alpha1.DeployCurrent, Revision: 2, Latest: 2, HealthChecked: true}
	with := func(f func(*configv1alpha1.DeployedPackage)) *configv1alpha1.DeployedPackage {
		p := *ok
		f(&p)
		return &p
	}
	noCluster := repo(ok, "")
	noCluster.Spec.Cluster = nil
	notRead := repo(nil, "")
	notRead.Status.Cluster = nil
	for _, tc := range []struct {
		name string
		repo *configv1alpha1.Repository
		want string
	}{
		{name: "healthy", repo: repo(ok, "")},
		{name: "healthy though a newer revision is published", repo: repo(with(func(p *configv1alpha1.DeployedPackage) { p.State, p.Latest = configv1alpha1.DeployBehind, 3 }), "")},
		{name: "no spec.cluster", repo: noCluster, want: "has no spec.cluster"},
		{name: "not read yet", repo: notRead, want: "has not been read yet"},
		{name: "unreachable", repo: repo(ok, "dial tcp: i/o timeout"), want: "cannot be read: dial tcp"},
		{name: "package not seen", repo: repo(nil, ""), want: "has not been read since"},
		{name: "older revision", repo: repo(with(func(p *configv1alpha1.DeployedPackage) { p.Revision, p.Message = 1, "behind" }), ""), want: "runs revision 1"},
		{name: "failed", repo: repo(with(func(p *configv1alpha1.DeployedPackage) {
			p.State, p.Message = configv1alpha1.DeployFailed, "Kustomization flux-system/c1 is Ready=False HealthCheckFailed"
		}), ""), want: "HealthCheckFailed"},
		{name: "retrying after a failure", repo: repo(with(func(p *configv1alpha1.DeployedPackage) {
			p.Revision, p.State, p.Message, p.LastFailure = 1, configv1alpha1.DeployProgressing, "Reconciliation in progress", "Ready=False HealthCheckFailed: Deployment/web"
		}), ""), want: "runs revision 1 (Reconciliation in progress); its last attempt failed: Ready=False HealthCheckFailed"},
		{name: "does not wait", repo: repo(with(func(p *configv1alpha1.DeployedPackage) { p.HealthChecked = false }), ""), want: "spec.wait: true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			healthy, why := Healthy(tc.repo, "app", 2)
			g.Expect(healthy).To(Equal(tc.want == ""), why)
			if tc.want != "" {
				g.Expect(why).To(ContainSubstring(tc.want))
			}
		})
	}
}

// A Kustomization as Flux writes it: Ready's observedGeneration counts
// (status.observedGeneration reads -1 for a while after Ready).
func TestKustomizationFrom(t *testing.T) {
	g := NewWithT(t)
	u := &unstructured.Unstructured{}
	js, err := yaml.YAMLToJSON([]byte(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system, generation: 2}
spec: {wait: true, suspend: false}
status:
  observedGeneration: -1
  lastAppliedRevision: main@sha1:13c12439ace1f1e2b60a93a63e210c40e16656d8
  lastAttemptedRevision: main@sha1:13c12439ace1f1e2b60a93a63e210c40e16656d8
  conditions:
  - {type: Healthy, status: "True", reason: Succeeded, observedGeneration: 2}
  - {type: Ready, status: "True", reason: ReconciliationSucceeded, message: "Applied revision: main@sha1:13c1", observedGeneration: 2}
`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(u.UnmarshalJSON(js)).To(Succeed(), "as the API server's answer is read")
	k := KustomizationFrom(u)
	g.Expect(*k).To(Equal(Kustomization{Namespace: "flux-system", Name: "apps", Generation: 2, ObservedGeneration: 2, Waits: true,
		Ready: metav1.ConditionTrue, ReadyReason: "ReconciliationSucceeded", ReadyText: "Applied revision: main@sha1:13c1",
		LastAppliedRevision: "main@sha1:13c12439ace1f1e2b60a93a63e210c40e16656d8", LastAttemptedRevision: "main@sha1:13c12439ace1f1e2b60a93a63e210c40e16656d8"}))
	unstructured.RemoveNestedField(u.Object, "spec", "wait")
	g.Expect(unstructured.SetNestedSlice(u.Object, []any{map[string]any{"kind": "Deployment", "name": "web"}}, "spec", "healthChecks")).To(Succeed())
	g.Expect(KustomizationFrom(u).Waits).To(BeTrue(), "healthChecks check health too")
}

// Flux retries a failed health check and reads Progressing meanwhile: the
// failure is kept while it retries the same attempt, and forgotten once
// it applied something else or gave up trying.
func TestLastFailure(t *testing.T) {
	failed := configv1alpha1.DeployedPackage{Package: "app", State: configv1alpha1.DeployFailed, AppliedRevision: "main@sha1:1", Message: "HealthCheckFailed", LastFailure: "HealthCheckFailed"}
	before := &configv1alpha1.ClusterStatus{Packages: []configv1alpha1.DeployedPackage{failed}}
	retrying := configv1alpha1.DeployedPackage{Package: "app", State: configv1alpha1.DeployProgressing, AppliedRevision: "main@sha1:1"}
	for _, tc := range []struct {
		name   string
		d      configv1alpha1.DeployedPackage
		v      Verdict
		before *configv1alpha1.ClusterStatus
		want   string
	}{
		{name: "failing now", d: failed, want: "HealthCheckFailed"},
		{name: "retrying the same attempt", d: retrying, v: Verdict{Applied: "main@sha1:1", Attempted: "main@sha1:2"}, before: before, want: "HealthCheckFailed"},
		{name: "applied the attempt since", d: configv1alpha1.DeployedPackage{Package: "app", State: configv1alpha1.DeployProgressing, AppliedRevision: "main@sha1:2"},
			v: Verdict{Applied: "main@sha1:2", Attempted: "main@sha1:2"}, before: before},
		{name: "current", d: configv1alpha1.DeployedPackage{Package: "app", State: configv1alpha1.DeployCurrent, AppliedRevision: "main@sha1:1"}, before: before},
		{name: "nothing before", d: retrying, v: Verdict{Applied: "main@sha1:1", Attempted: "main@sha1:2"}},
	} {
		if got := lastFailure(tc.d, tc.v, tc.before); got != tc.want {
			t.Errorf("%s: lastFailure = %q, want %q", tc.name, got, tc.want)
		}
	}
}
