package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/receiver"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

// Sync on push: a git host's push webhook, verified with the namespace's
// token, makes the Repositories of the pushed repository and ref sync at
// once (the Repository here polls once an hour); GitHub's, Gitea's,
// GitLab's and a generic hook are read; anything not verified is refused
// and logged without its body; a namespace's token verifies its own
// Repositories only; too many hooks are answered 429.
func TestWebhookReceiver(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "hooks")
	other := env.Namespace(t, "hooks-other")
	root := gitserver.Root(t)
	bare := gitserver.InitBare(t, root, "Fleet.git")
	gitserver.SeedRevisions(t, bare, 1, 1, 0)
	srv := gitserver.NewServer(t, root)
	url := srv.URLFor("Fleet.git")
	for _, n := range []string{ns, other} {
		g.Expect(k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Namespace: n, Name: "fleet"},
			Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: url}, Sync: &configv1alpha1.RepositorySync{Period: &metav1.Duration{Duration: time.Hour}}}})).To(Succeed())
		repoReady(g, n, "fleet")
	}
	token := "hook-token-" + ns
	g.Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: receiver.SecretName}, Data: map[string][]byte{receiver.TokenKey: []byte(token)}})).To(Succeed())
	g.Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: receiver.SecretName}, Data: map[string][]byte{receiver.TokenKey: []byte("other-token")}})).To(Succeed())

	var logs bytes.Buffer
	var logMu sync.Mutex
	log := funcr.New(func(prefix, args string) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintln(&logs, prefix, args)
	}, funcr.Options{})
	rc := &receiver.Receiver{Client: k8sClient, Secrets: k8sClient, Log: log}
	hooks := httptest.NewServer(rc)
	t.Cleanup(hooks.Close)

	sign := func(body []byte, key string) string {
		mac := hmac.New(sha256.New, []byte(key))
		mac.Write(body)
		return hex.EncodeToString(mac.Sum(nil))
	}
	send := func(ns string, headers map[string]string, body []byte) (int, string) {
		req, err := http.NewRequest(http.MethodPost, hooks.URL+"/hook/"+ns, bytes.NewReader(body))
		g.Expect(err).NotTo(HaveOccurred())
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		defer func() { _ = res.Body.Close() }()
		out, _ := io.ReadAll(res.Body)
		return res.StatusCode, strings.TrimSpace(string(out))
	}
	github := func(ref string) []byte {
		body, _ := json.Marshal(map[string]any{"ref": ref, "repository": map[string]any{
			// The host's spelling: another case, no .git, its ssh URL too.
			"clone_url": strings.ToUpper(strings.TrimSuffix(url, ".git")) + "/", "ssh_url": "git@git.example.com:fleet/fleet.git"}})
		return body
	}
	synced := func(n string) string {
		r := &configv1alpha1.Repository{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: n, Name: "fleet"}, r)).To(Succeed())
		return r.Annotations[configv1alpha1.SyncRequestedAnnotation]
	}
	visible := func(n, name string) func(Gomega) {
		return func(g Gomega) {
			pr := &porchv1alpha1.PackageRevision{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: n, Name: name}, pr)).To(Succeed())
		}
	}

	// A push of a new draft, then GitHub's hook: visible at once.
	gitserver.CommitFiles(t, bare, "refs/heads/drafts/pushed/ws", map[string]string{"pushed/Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pushed\n"})
	start := time.Now()
	body := github("refs/heads/drafts/pushed/ws")
	code, out := send(ns, map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=" + sign(body, token)}, body)
	g.Expect(code).To(Equal(http.StatusOK), out)
	g.Expect(out).To(Equal(`{"synced":["fleet"]}`))
	g.Eventually(visible(ns, "fleet.pushed.ws"), 30*time.Second, 50*time.Millisecond).Should(Succeed())
	t.Logf("from the hook to the PackageRevision: %s (the Repository polls once an hour)", time.Since(start).Round(time.Millisecond))
	// The same through the controller's own receiver (--webhook-bind-address).
	gitserver.CommitFiles(t, bare, "refs/heads/drafts/pushed-too/ws", map[string]string{"pushed-too/Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pushed-too\n"})
	body2 := github("refs/heads/drafts/pushed-too/ws")
	req, err := http.NewRequest(http.MethodPost, webhookURL+"/hook/"+ns, bytes.NewReader(body2))
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-Hub-Signature-256", "sha256="+sign(body2, token))
	res, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	_ = res.Body.Close()
	g.Expect(res.StatusCode).To(Equal(http.StatusOK))
	g.Eventually(visible(ns, "fleet.pushed-too.ws"), 30*time.Second, 50*time.Millisecond).Should(Succeed())
	g.Expect(synced(other)).To(BeEmpty(), "the other namespace's Repository of the same URL is not touched")
	g.Consistently(func() error {
		return k8sClient.Get(ctx, client.ObjectKey{Namespace: other, Name: "fleet.pushed.ws"}, &porchv1alpha1.PackageRevision{})
	}, time.Second, 100*time.Millisecond).ShouldNot(Succeed())

	// Gitea's, GitLab's and a generic hook.
	code, out = send(ns, map[string]string{"X-Gitea-Event": "push", "X-Gitea-Signature": sign(body, token)}, body)
	g.Expect(code).To(Equal(http.StatusOK), out)
	g.Expect(out).To(Equal(`{"synced":["fleet"]}`))
	gitlab, _ := json.Marshal(map[string]any{"ref": "refs/tags/pushed/v1", "project": map[string]any{"git_http_url": url}})
	code, out = send(ns, map[string]string{"X-Gitlab-Event": "Tag Push Hook", "X-Gitlab-Token": token}, gitlab)
	g.Expect(code).To(Equal(http.StatusOK), out)
	g.Expect(out).To(Equal(`{"synced":["fleet"]}`))
	generic, _ := json.Marshal(map[string]any{"repository": url, "ref": "refs/heads/main"})
	code, out = send(ns, map[string]string{"X-Signature": "sha256=" + sign(generic, token)}, generic)
	g.Expect(code).To(Equal(http.StatusOK), out)
	g.Expect(out).To(Equal(`{"synced":["fleet"]}`))
	// A feature branch changes nothing Scion shows; a ping is answered.
	feature := github("refs/heads/feature/x")
	code, out = send(ns, map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=" + sign(feature, token)}, feature)
	g.Expect(code).To(Equal(http.StatusOK), out)
	g.Expect(out).To(Equal(`{"synced":[]}`))
	ping := []byte(`{"zen": "Keep it logically awesome."}`)
	code, _ = send(ns, map[string]string{"X-GitHub-Event": "ping", "X-Hub-Signature-256": "sha256=" + sign(ping, token)}, ping)
	g.Expect(code).To(Equal(http.StatusOK))

	// Not verified: refused alike, logged without the body.
	before := synced(ns)
	secretBody := []byte(`{"ref": "refs/heads/main", "repository": {"clone_url": "` + url + `"}, "note": "BODY-MUST-NOT-BE-LOGGED"}`)
	for name, headers := range map[string]map[string]string{
		"a wrong signature":             {"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=" + sign(secretBody, "guess")},
		"no signature":                  {"X-GitHub-Event": "push"},
		"another namespace's token":     {"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=" + sign(secretBody, "other-token")},
		"a wrong GitLab token":          {"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": "guess"},
		"an unknown algorithm":          {"X-Signature": "md5=" + sign(secretBody, token)},
		"a signature of another body":   {"X-Gitea-Event": "push", "X-Gitea-Signature": sign(body, token)},
		"a namespace without a webhook": {"X-GitHub-Event": "push", "X-Hub-Signature-256": "sha256=" + sign(secretBody, token), "X-Namespace": "none"},
	} {
		target := ns
		if headers["X-Namespace"] != "" {
			target = "default"
		}
		code, out := send(target, headers, secretBody)
		g.Expect(code).To(Equal(http.StatusUnauthorized), name)
		g.Expect(out).To(Equal("not verified"), name)
	}
	g.Expect(synced(ns)).To(Equal(before), "nothing unverified asked for a sync")
	logMu.Lock()
	g.Expect(logs.String()).To(ContainSubstring("webhook refused: not verified"))
	g.Expect(logs.String()).NotTo(ContainSubstring("BODY-MUST-NOT-BE-LOGGED"))
	g.Expect(logs.String()).NotTo(ContainSubstring(token))
	logMu.Unlock()
	code, _ = send("Not_A_Namespace", nil, body)
	g.Expect(code).To(Equal(http.StatusNotFound))
	req, _ = http.NewRequest(http.MethodGet, hooks.URL+"/hook/"+ns, nil)
	res, err = http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	_ = res.Body.Close()
	g.Expect(res.StatusCode).To(Equal(http.StatusMethodNotAllowed))

	// Rate limited per namespace.
	limited := httptest.NewServer(&receiver.Receiver{Client: k8sClient, Secrets: k8sClient, Log: log, Rate: 0.1, Burst: 1})
	t.Cleanup(limited.Close)
	var codes []int
	for range 3 {
		req, _ := http.NewRequest(http.MethodPost, limited.URL+"/hook/"+ns, bytes.NewReader(body))
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-Hub-Signature-256", "sha256="+sign(body, token))
		res, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		_ = res.Body.Close()
		codes = append(codes, res.StatusCode)
	}
	g.Expect(codes).To(Equal([]int{http.StatusOK, http.StatusTooManyRequests, http.StatusTooManyRequests}))
}
