// Package gitserver provides real git remotes for tests: bare repositories
// on disk and a smart-HTTP server (git http-backend behind net/http/cgi)
// with optional basic-auth or bearer-token checks.
package gitserver

import (
	"crypto/tls"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scion-dev/scion/internal/localca"
	"github.com/scion-dev/scion/internal/testutil/harness"
)

// Root returns a directory for the bare repositories of a test whose
// controllers run on after it returns (a manager shared by the package's
// tests may still be pushing to them): it is removed once the test is
// done, retried while a late writer adds files, and a leftover fails
// nothing (t.TempDir's cleanup failed such tests).
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "scion-git-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 20 {
			if os.RemoveAll(dir) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("left %s behind: something still writes into it", dir)
	})
	return dir
}

// InitBare creates a bare repository named name under root and returns
// its path. The repository accepts pushes over HTTP.
func InitBare(t testing.TB, root, name string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	Git(t, "", "init", "-q", "--bare", "-b", "main", dir)
	Git(t, dir, "config", "http.receivepack", "true")
	return dir
}

// Git runs git in dir and returns its trimmed output; a failure fails the
// test.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@example.com",
		"GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Server is a smart-HTTP git server over a folder of bare repositories.
type Server struct {
	*httptest.Server
	// Username and Password, when set, are required as basic auth.
	Username, Password string
	// Token, when set, is required as a bearer token.
	Token string
	// Root is the folder of the bare repositories served.
	Root string
	// ReadOnly refuses pushes (receive-pack) with 401, as a server that
	// lets the credentials read but not write.
	ReadOnly bool
	// Flood, when set, makes the server hostile: it answers a fetch with
	// a pack that does not end (it stops after Flood bytes, or when the
	// client hangs up), or with FloodRefs, answers the request for refs
	// so.
	Flood     int64
	FloodRefs bool
	// Flooded counts the bytes of flood sent, Floods the answers flooded.
	Flooded atomic.Int64
	Floods  atomic.Int32
}

// NewServer serves the bare repositories under root at /<name>. Call
// Close when done (t.Cleanup does it).
func NewServer(t harness.TB, root string) *Server {
	t.Helper()
	return NewServerOn(t, root, "127.0.0.1:0")
}

// NewServerOn is NewServer listening on addr (host:port; port 0 picks
// one): an address of this machine that others reach, such as the test
// node's Pods.
func NewServerOn(t harness.TB, root, addr string) *Server {
	t.Helper()
	return newServer(t, root, addr, nil)
}

// NewTLSServer is NewServer over https, with a serving certificate for
// 127.0.0.1 that ca signs.
func NewTLSServer(t harness.TB, root string, ca *localca.Authority) *Server {
	t.Helper()
	certPEM, keyPEM, err := ca.Issue("git", 2, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return newServer(t, root, "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
}

func newServer(t harness.TB, root, addr string, tlsConfig *tls.Config) *Server {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git is required: %v", err)
	}
	s := &Server{Root: root}
	backend := &cgi.Handler{
		Path: gitPath,
		Args: []string{"http-backend"},
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1"},
	}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if s.Flood > 0 && (s.FloodRefs && strings.HasSuffix(r.URL.Path, "/info/refs") ||
			!s.FloodRefs && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack")) {
			s.flood(w, r)
			return
		}
		// http-backend enables receive-pack for authenticated users.
		h := *backend
		h.Env = append(append([]string{}, backend.Env...), "REMOTE_USER=scion")
		h.ServeHTTP(w, r)
	}))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("git server: listening on %s: %v", addr, err)
	}
	_ = s.Server.Listener.Close()
	s.Server.Listener = l
	if tlsConfig != nil {
		s.Server.TLS = tlsConfig
		s.Server.StartTLS()
	} else {
		s.Server.Start()
	}
	t.Cleanup(s.Close)
	return s
}

// flood writes an answer that does not end: refs without end (well
// formed), or after the NAK of an upload-pack exchange, pack data on side
// band 1 in 64 KiB pkt-lines.
func (s *Server) flood(w http.ResponseWriter, r *http.Request) {
	s.Floods.Add(1)
	next := func(i int) []byte {
		payload := make([]byte, 65515)
		copy(payload, "PACK\x00\x00\x00\x02\x7f\xff\xff\xff")
		return append([]byte(fmt.Sprintf("%04x\x01", len(payload)+5)), payload...)
	}
	if s.FloodRefs {
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		_, _ = w.Write([]byte("001e# service=git-upload-pack\n0000"))
		next = func(i int) []byte {
			ref := fmt.Sprintf("%040x refs/heads/flood-%012d", i+1, i)
			if i == 0 {
				ref += "\x00side-band-64k ofs-delta"
			}
			ref += "\n"
			return []byte(fmt.Sprintf("%04x%s", len(ref)+4, ref))
		}
	} else {
		w.Header().Set("Content-Type", "application/x-git-upload-pack-result")
		_, _ = w.Write([]byte("0008NAK\n"))
	}
	for i := 0; s.Flooded.Load() < s.Flood && r.Context().Err() == nil; i++ {
		line := next(i)
		if _, err := w.Write(line); err != nil {
			return
		}
		s.Flooded.Add(int64(len(line)))
	}
}

func (s *Server) authorized(r *http.Request) bool {
	switch {
	case s.ReadOnly && (strings.HasSuffix(r.URL.Path, "/git-receive-pack") || r.URL.Query().Get("service") == "git-receive-pack"):
		return false
	case s.Token != "":
		return r.Header.Get("Authorization") == "Bearer "+s.Token
	case s.Username != "" || s.Password != "":
		u, p, ok := r.BasicAuth()
		return ok && u == s.Username && p == s.Password
	default:
		return true
	}
}

// URLFor returns the URL of the repository named name.
func (s *Server) URLFor(name string) string { return s.URL + "/" + name }

// SeedRevisions fills the bare repository with packages*(published+1)
// package revisions in one git fast-import: per package pkg-NNNN,
// `published` tagged revisions (pkg-NNNN/v1...) on main and one draft
// (branch drafts/pkg-NNNN/draft). Each package has a Kptfile and
// `resources` ConfigMaps.
func SeedRevisions(t testing.TB, bare string, packages, published, resources int) {
	t.Helper()
	var b strings.Builder
	mark := 0
	file := func(path, content string) {
		fmt.Fprintf(&b, "M 100644 inline %s\ndata %d\n%s\n", path, len(content), content)
	}
	const who = "Seed <seed@example.com> 1700000000 +0000"
	mainMark := 0
	for p := 0; p < packages; p++ {
		name := fmt.Sprintf("pkg-%04d", p)
		for n := 1; n <= published+1; n++ {
			mark++
			ref := "refs/heads/main"
			if n > published {
				ref = "refs/heads/drafts/" + name + "/draft"
			}
			fmt.Fprintf(&b, "commit %s\nmark :%d\ncommitter %s\ndata 6\nseeded\n", ref, mark, who)
			if mainMark > 0 {
				fmt.Fprintf(&b, "from :%d\n", mainMark)
			}
			file(name+"/Kptfile", fmt.Sprintf("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: %s\ninfo:\n  description: revision %d\n", name, n))
			for r := 0; r < resources; r++ {
				file(fmt.Sprintf("%s/cm-%02d.yaml", name, r), fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  revision: \"%d\"\n", r, n))
			}
			if n <= published {
				mainMark = mark
				fmt.Fprintf(&b, "tag %s/v%d\nfrom :%d\ntagger %s\ndata 10\npublished\n", name, n, mark, who)
			}
		}
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = bare
	cmd.Stdin = strings.NewReader(b.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git fast-import: %v\n%s", err, out)
	}
}

// CommitFiles writes, as a person with git would, one commit of files
// (path: content, a path any git tree takes, such as .git/config, which
// no checkout holds) to ref of the bare repository, with no parent, and
// returns its hash.
func CommitFiles(t testing.TB, bare, ref string, files map[string]string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "commit %s\ncommitter Person <person@example.com> 1700000000 +0000\ndata 8\nby hand\n", ref)
	for _, p := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(&b, "M 100644 inline %s\ndata %d\n%s\n", p, len(files[p]), files[p])
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = bare
	cmd.Stdin = strings.NewReader(b.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git fast-import: %v\n%s", err, out)
	}
	return Git(t, bare, "rev-parse", ref)
}

// Tarpit is a server that accepts connections and never answers, as a
// hung git server does. Its connections are closed when the test ends.
type Tarpit struct {
	// Addr is host:port.
	Addr string
	// accepted counts the connections accepted so far.
	accepted atomic.Int32
	// firstClosed is when a client first gave up a connection (Unix
	// nanoseconds; 0: none yet).
	firstClosed atomic.Int64
}

// NewTarpit starts a tarpit for the test.
func NewTarpit(t testing.TB) *Tarpit {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tp := &Tarpit{Addr: ln.Addr().String()}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tp.accepted.Add(1)
			mu.Lock()
			held = append(held, c) // accepted, never answered
			mu.Unlock()
			go func() {
				// Read what the client sends until it closes the
				// connection (its timeout), answering nothing.
				_, _ = io.Copy(io.Discard, c)
				tp.firstClosed.CompareAndSwap(0, time.Now().UnixNano())
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	return tp
}

// URLFor returns the http:// URL of a repository on the tarpit.
func (tp *Tarpit) URLFor(name string) string { return "http://" + tp.Addr + "/" + name }

// Accepted returns the number of connections accepted so far.
func (tp *Tarpit) Accepted() int { return int(tp.accepted.Load()) }

// FirstClosed is when a client first closed a connection it had made
// (gave up waiting), or the zero time.
func (tp *Tarpit) FirstClosed() time.Time {
	if n := tp.firstClosed.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// Blueprints is a plain git repository of packages, as a public catalog
// keeps one (no Scion layout): a Kptfile at the root, and the package
// blueprints/app with a ConfigMap whose color is blue at V1 (tagged
// app-v1.0 with an annotated tag, and v1-light with a lightweight one)
// and green at V2, the head of main.
type Blueprints struct {
	Bare   string
	V1, V2 string
}

// NewBlueprints makes Blueprints under root as name.
func NewBlueprints(t testing.TB, root, name string) Blueprints {
	t.Helper()
	b := Blueprints{Bare: InitBare(t, root, name)}
	w := filepath.Join(t.TempDir(), "w")
	Git(t, "", "clone", "-q", b.Bare, w)
	write := func(name, data string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(w, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(w, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	kptfile := func(name string) string {
		return "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + name + "\n"
	}
	cm := func(color string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  color: " + color + "\n"
	}
	write("Kptfile", kptfile("catalog"))
	write("blueprints/app/Kptfile", kptfile("app"))
	write("blueprints/app/cm.yaml", cm("blue"))
	Git(t, w, "add", "-A")
	Git(t, w, "commit", "-q", "-m", "app, blue")
	b.V1 = Git(t, w, "rev-parse", "HEAD")
	Git(t, w, "tag", "-a", "-m", "app 1.0", "app-v1.0")
	Git(t, w, "tag", "v1-light")
	write("blueprints/app/cm.yaml", cm("green"))
	Git(t, w, "commit", "-q", "-am", "app, green")
	b.V2 = Git(t, w, "rev-parse", "HEAD")
	Git(t, w, "push", "-q", "origin", "HEAD:main", "app-v1.0", "v1-light")
	return b
}
