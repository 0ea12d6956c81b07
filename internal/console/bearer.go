package console

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/rpkg"
)

// diffMemoSize bounds the diffs a session keeps between page loads (a
// proposals page shows up to DefaultPageSize revisions).
const diffMemoSize = 1000

// tokenKey is the context key of the person's bearer token.
type tokenKey struct{}

// withToken is ctx carrying the person's bearer token.
func withToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, tokenKey{}, token)
}

// BearerConfig makes cfg, the console's own in-cluster configuration,
// act for the person of each request: every Kubernetes request is made
// with the bearer token the request came with (which an authenticating
// proxy in front of the console passes on, and the API server
// authenticates). The console's own token is used only for API discovery
// (GET /api, /apis and their group versions, which every authenticated
// user may read); any other request without a person's token is refused
// before it leaves. A configuration whose own identity is a client
// certificate is refused: the API server would take the certificate's
// identity over the person's token.
func BearerConfig(cfg *rest.Config) (*rest.Config, error) {
	if len(cfg.CertData) > 0 || cfg.CertFile != "" || cfg.ExecProvider != nil || cfg.AuthProvider != nil {
		return nil, errors.New("--auth=bearer: the console's own credentials must be a token (its in-cluster service account): a client certificate or credential plugin would be used instead of the person's token")
	}
	out := rest.CopyConfig(cfg)
	out.Impersonate = rest.ImpersonationConfig{}
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &bearerTransport{next: rt} })
	return out, nil
}

// bearerTransport sets the person's token on each request (ahead of the
// console's own, which client-go's auth then leaves alone).
type bearerTransport struct {
	next http.RoundTripper
}

func (b *bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	token, _ := req.Context().Value(tokenKey{}).(string)
	if token == "" {
		if req.Method == http.MethodGet && discovery(req.URL.Path) {
			return b.next.RoundTrip(req)
		}
		return nil, fmt.Errorf("refused: %s %s without the person's token", req.Method, req.URL.Path)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+token)
	return b.next.RoundTrip(req)
}

// discovery reports whether path is API discovery: /api, /apis, /api/v1,
// /apis/GROUP and /apis/GROUP/VERSION.
func discovery(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch parts[0] {
	case "api":
		return len(parts) <= 2
	case "apis":
		return len(parts) <= 3
	}
	return false
}

// bearerToken is the request's bearer token ("" when it has none).
func bearerToken(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// sessionIdle is how long a person's session (who they are, their view of
// the revisions) outlives their last request.
const sessionIdle = 15 * time.Minute

// session is what the console keeps for one person between requests.
type session struct {
	revs     *rpkg.Client
	cache    *objectCache[*porchv1alpha1.PackageRevision, *porchv1alpha1.PackageRevisionList]
	variants *objectCache[*configv1alpha1.PackageVariant, *configv1alpha1.PackageVariantList]
	diffs    *rpkg.DiffMemo
	stop     context.CancelFunc
	ctx      context.Context
	used     time.Time
}

// sessions are the people's sessions by their token's digest (one
// session in kubeconfig mode, under "").
type sessions struct {
	mu   sync.Mutex
	byID map[string]*session
}

// session is the session of the request's person (r's context carries
// their token in bearer mode), made on their first request.
func (s *Server) session(ctx context.Context) *session {
	token, _ := ctx.Value(tokenKey{}).(string)
	id := ""
	if token != "" {
		sum := sha256.Sum256([]byte(token))
		id = hex.EncodeToString(sum[:])
	}
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	now := time.Now()
	for k, old := range s.sessions.byID {
		if k != "" && now.Sub(old.used) > sessionIdle {
			old.stop()
			delete(s.sessions.byID, k)
		}
	}
	se := s.sessions.byID[id]
	if se == nil {
		c, ns := s.opts.Client, s.opts.Namespace
		se = &session{revs: &rpkg.Client{Client: c, Namespace: ns, Timeout: 2 * time.Minute},
			cache:    newObjectCache[*porchv1alpha1.PackageRevision](c, ns, "PackageRevisions", func() *porchv1alpha1.PackageRevisionList { return &porchv1alpha1.PackageRevisionList{} }),
			variants: newObjectCache[*configv1alpha1.PackageVariant](c, ns, "PackageVariants", func() *configv1alpha1.PackageVariantList { return &configv1alpha1.PackageVariantList{} }),
			diffs:    rpkg.NewDiffMemo(diffMemoSize)}
		se.ctx, se.stop = context.WithCancel(withToken(s.ctx, token))
		s.sessions.byID[id] = se
	}
	se.used = now
	return se
}
