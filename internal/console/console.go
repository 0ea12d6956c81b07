// Package console serves `scion console`: web pages to look at a fleet,
// review what proposals change and approve them, and follow rollouts. It
// acts only with the person's own Kubernetes identity (the client it is
// given): every read and every approval is their request, which
// Kubernetes RBAC admits or refuses; it never holds or shows a credential.
package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/rolloutctl"
)

//go:embed assets
var assets embed.FS

// csrfCookie begins the name of the cookie that holds the token every
// state-changing request carries back. Each console's cookie has its own
// name (csrfCookie, a dash and a digest of its token): a browser keeps
// cookies per host, not per port, so two consoles on one host (two
// namespaces, two port-forwards) would otherwise overwrite each other's
// token, and each page's live updates would refuse the other's buttons.
const csrfCookie = "scion-console-csrf"

// Options configure a Server.
type Options struct {
	// Client acts as the person (their kubeconfig); it must be able to
	// watch (client.WithWatch) for pages to update live.
	Client client.WithWatch
	// Namespace is the namespace the console shows.
	Namespace string
	// PageSize bounds the rows of a list page (DefaultPageSize when 0).
	PageSize int
	// Bearer serves people behind an authenticating proxy: every request
	// must carry the person's bearer token, with which each of its
	// Kubernetes requests is made (Client must be built from
	// BearerConfig). Without it, the console acts as the Client's own
	// identity (the person running it).
	Bearer bool
}

// DefaultPageSize is how many rows a list page shows at once.
const DefaultPageSize = 100

// Server is the console's HTTP handler.
type Server struct {
	opts     Options
	rollouts *rolloutctl.Client
	pages    *template.Template
	csrf     string
	cookie   string
	mux      *http.ServeMux
	sessions sessions
	stop     context.CancelFunc
	ctx      context.Context
}

// New builds a Server.
func New(o Options) (*Server, error) {
	if o.Client == nil || o.Namespace == "" {
		return nil, errors.New("console: Client and Namespace are required")
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultPageSize
	}
	csrf, cookie, err := newToken()
	if err != nil {
		return nil, err
	}
	pages, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("console: parsing the pages: %w", err)
	}
	s := &Server{
		opts: o, pages: pages, csrf: csrf, cookie: cookie, mux: http.NewServeMux(),
		rollouts: &rolloutctl.Client{Client: o.Client, Namespace: o.Namespace},
		sessions: sessions{byID: map[string]*session{}},
	}
	s.ctx, s.stop = context.WithCancel(context.Background())
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", s.page("fleet", s.fleet))
	s.mux.HandleFunc("GET /proposals", s.page("proposals", s.proposals))
	s.mux.HandleFunc("GET /rollouts", s.page("rollouts", s.rolloutsPage))
	s.mux.HandleFunc("GET /package", s.page("package", s.history))
	s.mux.HandleFunc("GET /targets", s.page("targets", s.targets))
	s.mux.HandleFunc("GET /rollout", s.page("rollout", s.rolloutPage))
	s.mux.HandleFunc("GET /locks", s.page("locks", s.locks))
	s.mux.HandleFunc("POST /revisions", s.action(s.moveRevisions))
	s.mux.HandleFunc("POST /rollouts", s.action(s.moveRollout))
	s.mux.HandleFunc("GET /events", s.events)
	return s, nil
}

// Close stops what the Server keeps running between requests (its view
// of the namespace's revisions).
func (s *Server) Close() {
	s.stop()
}

// allRevisions is every PackageRevision of the namespace, from the
// console's cached view (started by the first page that asks).
func (s *Server) allRevisions(ctx context.Context) ([]*porchv1alpha1.PackageRevision, error) {
	se := s.session(ctx)
	se.cache.start(se.ctx, &porchv1alpha1.PackageRevision{})
	return se.cache.list(ctx)
}

// allVariants is every PackageVariant of the namespace, from the
// console's cached view.
func (s *Server) allVariants(ctx context.Context) ([]*configv1alpha1.PackageVariant, error) {
	se := s.session(ctx)
	se.variants.start(se.ctx, &configv1alpha1.PackageVariant{})
	return se.variants.list(ctx)
}

// ServeHTTP serves the console. Every answer forbids framing and
// sniffing, and loads nothing from elsewhere.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	if s.opts.Bearer {
		token := bearerToken(r)
		if token == "" {
			h.Set("WWW-Authenticate", `Bearer realm="scion console"`)
			http.Error(w, "this console acts as the person of each request: it needs their Kubernetes bearer token (Authorization: Bearer ...), which the authenticating proxy in front of it passes on", http.StatusUnauthorized)
			return
		}
		r = r.WithContext(withToken(r.Context(), token))
	}
	s.mux.ServeHTTP(w, r)
}

// who is the user the API server authenticates the console as.
func (s *Server) who(ctx context.Context) string {
	u, err := s.session(ctx).revs.Whoami(ctx)
	if err != nil {
		return "(unknown: the API server did not say)"
	}
	return u
}

// view is what every page gets.
type view struct {
	Title     string
	User      string
	Namespace string
	CSRF      string
	Path      string
	Data      any
	Error     string
	// Split shows diffs side by side (?view=split); Unified and
	// SideBySide are this page's address in each view.
	Split               bool
	Unified, SideBySide string
	// Still is a page that shows a moment (an action's outcome) and is
	// not redrawn when what it came from changes: it is served at the
	// address of the form, so a live update would replace the outcome
	// with that page before the person has read it.
	Still bool
}

// page serves a page whose data load makes; an error of load (RBAC
// refusing a read, a revision that cannot be read) is shown on the page,
// not as a blank one.
func (s *Server) page(name string, load func(*http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.setToken(w)
		v := view{Title: name, User: s.who(r.Context()), Namespace: s.opts.Namespace, CSRF: s.csrf, Path: r.URL.RequestURI(),
			Split: r.URL.Query().Get("view") == "split"}
		v.Unified, v.SideBySide = withView(r.URL, ""), withView(r.URL, "split")
		data, err := load(r)
		v.Data = data
		if err != nil {
			v.Error = err.Error()
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := s.pages.ExecuteTemplate(w, name+".html", v); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}
}

// withView is u's path and query with ?view= set to view ("" removes it).
func withView(u *url.URL, view string) string {
	q := u.Query()
	q.Del("view")
	if view != "" {
		q.Set("view", view)
	}
	if len(q) == 0 {
		return u.Path
	}
	return u.Path + "?" + q.Encode()
}

// action serves a state-changing request: a POST from one of the
// console's own pages (its token, in the form and in the cookie, and the
// same origin), done as the person; the outcome is shown on a page.
func (s *Server) action(do func(*http.Request) ([]outcome, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := s.checkOrigin(r); err != nil {
			http.Error(w, err.Error(), http.StatusForbidden)
			return
		}
		v := view{Title: "result", User: s.who(r.Context()), Namespace: s.opts.Namespace, CSRF: s.csrf, Path: r.URL.RequestURI(), Still: true}
		outcomes, err := do(r)
		v.Data = result{Outcomes: outcomes, Back: back(r)}
		if err != nil {
			v.Error = err.Error()
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := s.pages.ExecuteTemplate(w, "result.html", v); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}
}

// newToken makes a console's token and the name of the cookie that holds
// it.
func newToken() (token, cookie string, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("console: making its token: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(b), csrfCookie + "-" + hex.EncodeToString(sum[:6]), nil
}

// setToken gives the browser the console's token in its cookie.
func (s *Server) setToken(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: s.csrf, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
}

// checkOrigin admits a POST only with the console's token (form and
// cookie) and, when the browser says where it comes from, from the
// console's own origin.
func (s *Server) checkOrigin(r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return fmt.Errorf("reading the form: %w", err)
	}
	c, err := r.Cookie(s.cookie)
	if err != nil || subtle.ConstantTimeCompare([]byte(c.Value), []byte(s.csrf)) != 1 ||
		subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(s.csrf)) != 1 {
		return errors.New("refused: this request did not come from a page of this console (its token is missing or wrong); reload the page and try again")
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return fmt.Errorf("refused: a request from %s, not from this console", o)
		}
	}
	return nil
}

// back is the page a result links back to: the console page the form was
// on.
func back(r *http.Request) string {
	b := r.PostFormValue("back")
	if !strings.HasPrefix(b, "/") || strings.HasPrefix(b, "//") {
		return "/"
	}
	return b
}

// outcome is what an action did to one object.
type outcome struct {
	Name  string
	Done  string
	Error string
}

type result struct {
	Outcomes []outcome
	Back     string
}
