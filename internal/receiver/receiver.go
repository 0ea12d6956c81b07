// Package receiver makes Repositories sync as soon as their git host says
// something was pushed: it accepts GitHub, GitLab and Gitea push webhooks
// and a generic one at /hook/<namespace>, checks them against the token in
// that namespace's Secret (an HMAC of the body, or GitLab's token), finds
// the namespace's Repositories of the pushed repository and ref, and asks
// each to sync (the sync-requested annotation). Anything it cannot verify
// is refused and logged without its body.
package receiver

import (
	"context"
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // GitHub's and the generic hook's legacy signature; sha256 is preferred
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgservice"
)

// SecretName is the Secret of a namespace whose key TokenKey verifies the
// webhooks of that namespace: no Secret, no webhooks.
const (
	SecretName = "scion-webhook"
	TokenKey   = "token"
)

// MaxBody bounds a webhook's body: a push event of thousands of commits
// is well under it.
const MaxBody = 1 << 20

// Receiver is the webhooks' http.Handler.
type Receiver struct {
	// Client reads Repositories (from the cache) and patches them.
	Client client.Client
	// Secrets reads the namespaces' webhook Secrets (the API server: the
	// controller keeps no Secret it was not told to).
	Secrets client.Reader
	// Log records refusals (never a body) and syncs.
	Log logr.Logger
	// Rate and Burst bound the webhooks accepted per namespace (10 per
	// second, bursts of 20, when 0); more are answered 429.
	Rate  rate.Limit
	Burst int

	mu       sync.Mutex
	limiters map[string]*rate.Limiter
}

// Result is the JSON answer to an accepted webhook.
type Result struct {
	// Synced are the Repositories asked to sync.
	Synced []string `json:"synced"`
}

// ServeHTTP handles POST /hook/<namespace>.
func (rc *Receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ns, ok := strings.CutPrefix(r.URL.Path, "/hook/")
	if !ok || len(validation.IsDNS1123Label(ns)) > 0 {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST a push event", http.StatusMethodNotAllowed)
		return
	}
	log := rc.Log.WithValues("namespace", ns, "remote", r.RemoteAddr, "kind", kindOf(r.Header))
	if !rc.limiter(ns).Allow() {
		log.Info("webhook refused: too many requests")
		http.Error(w, "too many webhooks for this namespace; try again shortly", http.StatusTooManyRequests)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		log.Info("webhook refused: body unreadable or over the limit", "limit", MaxBody)
		http.Error(w, fmt.Sprintf("the body is unreadable or over %d bytes", MaxBody), http.StatusRequestEntityTooLarge)
		return
	}
	token, err := rc.token(r.Context(), ns)
	if err != nil {
		// Said the same whether the Secret is missing or the
		// signature wrong: a caller learns nothing of the namespace.
		log.Info("webhook refused: no token to verify it with", "reason", err.Error())
		http.Error(w, "not verified", http.StatusUnauthorized)
		return
	}
	ev, err := verify(r.Header, body, token)
	if err != nil {
		log.Info("webhook refused: not verified", "reason", err.Error())
		http.Error(w, "not verified", http.StatusUnauthorized)
		return
	}
	if ev.ping {
		w.WriteHeader(http.StatusOK)
		_ = json.NewEncoder(w).Encode(Result{Synced: []string{}})
		return
	}
	synced, err := rc.sync(r.Context(), ns, ev)
	if err != nil {
		log.Error(err, "webhook: asking Repositories to sync")
		http.Error(w, "the Repositories could not be asked to sync; the webhook may be sent again", http.StatusServiceUnavailable)
		return
	}
	log.Info("webhook: Repositories asked to sync", "repositories", synced, "ref", ev.ref)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(Result{Synced: synced})
}

func (rc *Receiver) limiter(ns string) *rate.Limiter {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.limiters == nil {
		rc.limiters = map[string]*rate.Limiter{}
	}
	l, ok := rc.limiters[ns]
	if !ok {
		limit, burst := rc.Rate, rc.Burst
		if limit == 0 {
			limit, burst = 10, 20
		}
		l = rate.NewLimiter(limit, burst)
		rc.limiters[ns] = l
	}
	return l
}

func (rc *Receiver) token(ctx context.Context, ns string) ([]byte, error) {
	s := &corev1.Secret{}
	if err := rc.Secrets.Get(ctx, types.NamespacedName{Namespace: ns, Name: SecretName}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("secret %s/%s does not exist", ns, SecretName)
		}
		return nil, fmt.Errorf("reading secret %s/%s: %w", ns, SecretName, err)
	}
	t := s.Data[TokenKey]
	if len(t) == 0 {
		return nil, fmt.Errorf("secret %s/%s has no %q", ns, SecretName, TokenKey)
	}
	return t, nil
}

// sync asks the namespace's Repositories of the pushed repository and
// ref to sync; it returns their names.
func (rc *Receiver) sync(ctx context.Context, ns string, ev event) ([]string, error) {
	list := &configv1alpha1.RepositoryList{}
	if err := rc.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	synced := []string{}
	for i := range list.Items {
		repo := &list.Items[i]
		if repo.Spec.Git == nil || !repo.DeletionTimestamp.IsZero() || !ev.names(repo.Spec.Git.Repo) || !refMatters(ev.ref, repo.Spec.Git) {
			continue
		}
		if err := pkgservice.RequestSync(ctx, rc.Client, repo); err != nil {
			return synced, fmt.Errorf("repository %s/%s: %w", ns, repo.Name, err)
		}
		synced = append(synced, repo.Name)
	}
	return synced, nil
}

// event is what a verified webhook says.
type event struct {
	ping bool
	// urls are the pushed repository's URLs (clone, ssh, web).
	urls []string
	// ref is the ref pushed (refs/heads/main); "" when the hook does not
	// say.
	ref string
}

// names says whether the event is of the repository at url.
func (e event) names(url string) bool {
	want := NormalizeURL(url)
	for _, u := range e.urls {
		if u != "" && NormalizeURL(u) == want {
			return true
		}
	}
	return false
}

// refMatters says whether a push to ref can change what a Repository
// shows: its branch, the lifecycle branches, tags. A hook that names no
// ref matters.
func refMatters(ref string, g *configv1alpha1.GitRepository) bool {
	if ref == "" || strings.HasPrefix(ref, "refs/tags/") {
		return true
	}
	branch, ok := strings.CutPrefix(ref, "refs/heads/")
	if !ok {
		return false
	}
	b := g.Branch
	if b == "" {
		b = "main"
	}
	for _, p := range []string{"drafts/", "proposed/", "deletionProposed/"} {
		if strings.HasPrefix(branch, p) {
			return true
		}
	}
	return branch == b
}

// NormalizeURL is the form of a repository URL two hooks and a Repository
// compare in: in lower case (git hosts take paths in any case; a match
// too many only syncs once more), without user, scheme, port, a trailing
// ".git" or "/"; git's user@host:path is host/path.
func NormalizeURL(raw string) string {
	s := strings.TrimSpace(raw)
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	} else if at := strings.Index(s, "@"); at >= 0 && strings.Contains(s[at:], ":") {
		s = s[at+1:]
		s = strings.Replace(s, ":", "/", 1)
	}
	if at := strings.LastIndex(strings.SplitN(s, "/", 2)[0], "@"); at >= 0 {
		s = s[at+1:]
	}
	host, path, _ := strings.Cut(s, "/")
	if h, _, ok := strings.Cut(host, ":"); ok && !strings.HasPrefix(host, "[") {
		host = h
	}
	path = strings.TrimSuffix(strings.TrimSuffix(path, "/"), ".git")
	return strings.ToLower(host + "/" + path)
}

// kindOf names the hook's sender from its headers.
func kindOf(h http.Header) string {
	switch {
	case h.Get("X-GitHub-Event") != "":
		return "github"
	case h.Get("X-Gitea-Event") != "":
		return "gitea"
	case h.Get("X-Gitlab-Event") != "":
		return "gitlab"
	}
	return "generic"
}

// verify checks a hook against the namespace's token and reads it:
// GitHub's X-Hub-Signature-256 (or -1), Gitea's X-Gitea-Signature, an
// HMAC of the body; GitLab's X-Gitlab-Token, the token itself; a generic
// hook's X-Signature (sha256=, sha512= or sha1= and an HMAC of the body).
func verify(h http.Header, body, token []byte) (event, error) {
	switch kindOf(h) {
	case "github":
		sig := h.Get("X-Hub-Signature-256")
		if sig == "" {
			sig = h.Get("X-Hub-Signature")
		}
		if err := checkHMAC(sig, body, token); err != nil {
			return event{}, fmt.Errorf("X-Hub-Signature-256: %w", err)
		}
		if e := h.Get("X-GitHub-Event"); e == "ping" {
			return event{ping: true}, nil
		} else if e != "push" {
			return event{}, fmt.Errorf("X-GitHub-Event %q is not push", e)
		}
		return parse(body, func(p payload) []string { return p.repository().urls() })
	case "gitea":
		if err := checkHMAC("sha256="+h.Get("X-Gitea-Signature"), body, token); err != nil {
			return event{}, fmt.Errorf("X-Gitea-Signature: %w", err)
		}
		if e := h.Get("X-Gitea-Event"); e != "push" {
			return event{}, fmt.Errorf("X-Gitea-Event %q is not push", e)
		}
		return parse(body, func(p payload) []string { return p.repository().urls() })
	case "gitlab":
		if !hmac.Equal([]byte(h.Get("X-Gitlab-Token")), token) {
			return event{}, errors.New("X-Gitlab-Token is not the token")
		}
		if e := h.Get("X-Gitlab-Event"); e != "Push Hook" && e != "Tag Push Hook" {
			return event{}, fmt.Errorf("X-Gitlab-Event %q is not a push", e)
		}
		return parse(body, func(p payload) []string {
			return []string{p.Project.GitHTTPURL, p.Project.GitSSHURL, p.Project.WebURL}
		})
	default:
		if err := checkHMAC(h.Get("X-Signature"), body, token); err != nil {
			return event{}, fmt.Errorf("X-Signature: %w", err)
		}
		return parse(body, func(p payload) []string { return []string{p.repositoryURL()} })
	}
}

// checkHMAC checks a signature "ALGORITHM=HEX" of body keyed with token.
func checkHMAC(sig string, body, token []byte) error {
	algo, digest, ok := strings.Cut(sig, "=")
	if !ok || digest == "" {
		return errors.New("missing, or not ALGORITHM=HEX")
	}
	var h func() hash.Hash
	switch algo {
	case "sha256":
		h = sha256.New
	case "sha512":
		h = sha512.New
	case "sha1":
		h = sha1.New
	default:
		return fmt.Errorf("algorithm %q is not sha256, sha512 or sha1", algo)
	}
	got, err := hex.DecodeString(digest)
	if err != nil {
		return errors.New("not hexadecimal")
	}
	mac := hmac.New(h, token)
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return errors.New("does not match the body and the token")
	}
	return nil
}

// payload holds the fields of the push events read.
type payload struct {
	Ref        string          `json:"ref"`
	Repository json.RawMessage `json:"repository"`
	Project    struct {
		GitHTTPURL string `json:"git_http_url"`
		GitSSHURL  string `json:"git_ssh_url"`
		WebURL     string `json:"web_url"`
	} `json:"project"`
}

// repository is GitHub's and Gitea's repository object.
type repository struct {
	CloneURL string `json:"clone_url"`
	SSHURL   string `json:"ssh_url"`
	HTMLURL  string `json:"html_url"`
}

func (r repository) urls() []string { return []string{r.CloneURL, r.SSHURL, r.HTMLURL} }

// repositoryURL is a generic hook's repository: a string.
func (p payload) repositoryURL() string {
	var s string
	_ = json.Unmarshal(p.Repository, &s)
	return s
}

// repository is GitHub's and Gitea's repository object.
func (p payload) repository() repository {
	var r repository
	_ = json.Unmarshal(p.Repository, &r)
	return r
}

// parse reads a verified body; urls picks the repository's URLs.
func parse(body []byte, urls func(payload) []string) (event, error) {
	var p payload
	if err := json.Unmarshal(body, &p); err != nil {
		return event{}, fmt.Errorf("the body is not a push event's JSON: %w", err)
	}
	ev := event{urls: urls(p), ref: p.Ref}
	for _, u := range ev.urls {
		if u != "" {
			return ev, nil
		}
	}
	return event{}, errors.New("the event names no repository URL")
}

// Server serves the receiver at addr until ctx is done.
func Server(ctx context.Context, addr string, h http.Handler) error {
	mux := http.NewServeMux()
	mux.Handle("/hook/", h)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	select {
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(shutdown)
	case err := <-errc:
		return fmt.Errorf("webhook receiver on %s: %w", addr, err)
	}
}
