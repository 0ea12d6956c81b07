// Package registry starts a real OCI registry for tests: the distribution
// project's registry (Debian's docker-registry package, which the test
// setup installs) on loopback, with TLS from a CA made for the test and
// htpasswd authentication.
package registry

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/scion-dev/scion/internal/devenv"
	"github.com/scion-dev/scion/internal/localca"
	"github.com/scion-dev/scion/internal/testutil/harness"
)

// Binary is the registry's path, unless SCION_REGISTRY names another.
const Binary = "/usr/bin/docker-registry"

// Registry is a running registry.
type Registry struct {
	// Host is host:port, as references name it.
	Host string
	// Username and Password are the account htpasswd holds.
	Username, Password string
	// CAFile is the PEM of the CA that signed its certificate; Transport
	// trusts it.
	CAFile    string
	Transport *http.Transport
	// Log is the file the registry logs to: warnings, errors and the
	// access log, a line per request (Requests).
	Log string

	tokens *tokenService // StartTokens'
}

// Start runs a registry until the test ends.
func Start(t testing.TB) *Registry { return start(t, htpasswd) }

// StartPlain runs a registry with neither TLS nor authentication until the
// test ends: what a container engine pulls from on a machine whose own
// trust and credentials the test must not change (its CAFile and Transport
// are empty; references name it as an insecure registry).
func StartPlain(t testing.TB) *Registry { return start(t, plain) }

// StartTokens runs a registry until the test ends whose clients
// authenticate with bearer tokens from a token service, as most hosted
// registries have it (Docker Hub, GitHub's, Harbor, cloud registries): a
// client pings the registry, is sent to the service, asks it with its
// password for a token of the scopes it needs and sends the token.
// Username's token may have any action; AddUser adds others.
func StartTokens(t testing.TB) *Registry { return start(t, tokens) }

// authMode is how a registry's clients authenticate.
type authMode int

const (
	htpasswd authMode = iota // a password on every request
	plain                    // not at all, and no TLS
	tokens                   // bearer tokens from a token service
)

// StartMain runs a registry for a whole test package (from TestMain, to
// configure the controllers with its CA before they start); stop stops
// it and removes its files.
func StartMain() (r *Registry, stop func(), err error) {
	return startMain(htpasswd)
}

// StartMainTokens is StartMain with StartTokens' registry.
func StartMainTokens() (r *Registry, stop func(), err error) {
	return startMain(tokens)
}

// StartMainPlain is StartMain with StartPlain's registry.
func StartMainPlain() (r *Registry, stop func(), err error) {
	return startMain(plain)
}

func startMain(mode authMode) (r *Registry, stop func(), err error) {
	stop, err = harness.Main(func(t harness.TB) { r = start(t, mode) })
	return r, stop, err
}

func start(t harness.TB, mode authMode) *Registry {
	t.Helper()
	bin := os.Getenv("SCION_REGISTRY")
	if bin == "" {
		bin = Binary
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no registry at %s: make test installs it (make registry: hack/install-registry.sh), or set SCION_REGISTRY", bin)
	}
	dir := t.TempDir()
	r := &Registry{Username: "scion", Password: "s3cret-" + fmt.Sprint(time.Now().UnixNano())}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.Host = l.Addr().String()
	_ = l.Close()
	if mode == plain {
		cfg, err := devenv.WriteRegistryConfig(dir, r.Host)
		if err != nil {
			t.Fatal(err)
		}
		r.Username, r.Password = "", ""
		r.Log = run(t, bin, dir, cfg)
		waitServing(t, dir, "http://"+r.Host+"/v2/", http.DefaultTransport, http.StatusOK)
		return r
	}
	caPEM, certPEM, keyPEM := certificates(t)
	r.CAFile = filepath.Join(dir, "ca.pem")
	write(t, r.CAFile, caPEM)
	write(t, filepath.Join(dir, "cert.pem"), certPEM)
	write(t, filepath.Join(dir, "key.pem"), keyPEM)
	hash, err := bcrypt.GenerateFromPassword([]byte(r.Password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "htpasswd"), []byte(r.Username+":"+string(hash)+"\n"))
	auth := fmt.Sprintf("htpasswd: {realm: scion-test, path: %s}", filepath.Join(dir, "htpasswd"))
	if mode == tokens {
		var tokenCert []byte
		r.tokens, tokenCert = newTokenService(t)
		r.AddUser(r.Username, r.Password)
		write(t, filepath.Join(dir, "token.pem"), tokenCert)
		auth = fmt.Sprintf("token: {realm: %s, service: %s, issuer: %s, rootcertbundle: %s}",
			r.tokens.serve(t, certPEM, keyPEM), r.tokens.service, r.tokens.issuer, filepath.Join(dir, "token.pem"))
	}
	write(t, filepath.Join(dir, "config.yml"), []byte(fmt.Sprintf(`version: 0.1
log: {level: warn}
storage:
  filesystem: {rootdirectory: %s}
  delete: {enabled: true}
http:
  addr: %s
  tls: {certificate: %s, key: %s}
auth:
  %s
`, filepath.Join(dir, "data"), r.Host, filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), auth)))
	r.Log = run(t, bin, dir, filepath.Join(dir, "config.yml"))
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	r.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	waitServing(t, dir, "https://"+r.Host+"/v2/", r.Transport, http.StatusUnauthorized)
	return r
}

// run starts the registry with its configuration cfg, logging to dir,
// until the test ends; it returns the log's path.
func run(t harness.TB, bin, dir, cfg string) string {
	t.Helper()
	logf, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := devenv.RegistryCommand(bin, cfg)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logf.Close()
	})
	return logf.Name()
}

// waitServing waits until url answers want.
func waitServing(t harness.TB, dir, url string, transport http.RoundTripper, want int) {
	t.Helper()
	c := &http.Client{Transport: transport, Timeout: time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := c.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == want {
				return
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "registry.log"))
			t.Fatalf("the registry did not start (last: %v):\n%s", err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// DockerConfig writes a Docker config file (in a new folder, as
// DOCKER_CONFIG names it) with the given password for the registry's
// account, and returns the folder.
func (r *Registry) DockerConfig(t testing.TB, password string) string {
	return r.dockerConfig(t, password)
}

// DockerConfigJSON is the content of a Docker config file with the given
// password for the registry's account: the .dockerconfigjson of a
// kubernetes.io/dockerconfigjson Secret.
func (r *Registry) DockerConfigJSON(password string) []byte {
	auth := base64.StdEncoding.EncodeToString([]byte(r.Username + ":" + password))
	return []byte(fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, r.Host, auth))
}

func (r *Registry) dockerConfig(t harness.TB, password string) string {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "config.json"), r.DockerConfigJSON(password))
	return dir
}

func write(t harness.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// certificates makes a CA and a certificate for 127.0.0.1 and localhost
// signed by it.
func certificates(t harness.TB) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	ca, err := localca.New("scion test registry CA")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err = ca.Issue("127.0.0.1", 2, "127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	return ca.PEM, certPEM, keyPEM
}
