package registry

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/scion-dev/scion/internal/testutil/harness"
)

// tokenService is the authentication service of a registry started by
// StartTokens: the distribution project's bearer token scheme, which most
// hosted registries use. A client asks it, with its password, for a
// token of scopes ("repository:NAME:push,pull"); it answers with a JSON
// Web Token, signed with ES256 and carrying its certificate (x5c), that
// the registry checks against that certificate.
type tokenService struct {
	issuer, service string
	key             *ecdsa.PrivateKey
	cert            []byte // DER

	mu    sync.Mutex
	users map[string]tokenUser
	asked []string // the scopes of each token asked for, space-separated
}

// tokenUser is an account: its password and the actions it may have
// (nil: any). A request for more is refused (401), as strict token
// services do.
type tokenUser struct {
	password string
	actions  []string
}

// newTokenService makes a token service and the PEM of the certificate
// the registry trusts its tokens by.
func newTokenService(t harness.TB) (*tokenService, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "scion test token service"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	s := &tokenService{issuer: "scion-test-tokens", service: "scion-test-registry", key: key, cert: der, users: map[string]tokenUser{}}
	return s, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// serve runs the service over TLS with the registry's certificate until
// the test ends, and returns its token URL.
func (s *tokenService) serve(t harness.TB, certPEM, keyPEM []byte) string {
	t.Helper()
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(s)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	// By name: the registry client refuses a token service at a private
	// IP address (other than the registry's own host and port), against
	// a registry that would send it to an internal service.
	return strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/token"
}

func (s *tokenService) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	name, password, ok := req.BasicAuth()
	s.mu.Lock()
	u, known := s.users[name]
	s.mu.Unlock()
	if !ok || !known || u.password != password {
		http.Error(w, "unknown account or wrong password", http.StatusUnauthorized)
		return
	}
	q := req.URL.Query()
	if q.Get("service") != s.service {
		http.Error(w, "unknown service", http.StatusBadRequest)
		return
	}
	type resourceActions struct {
		Type    string   `json:"type"`
		Name    string   `json:"name"`
		Actions []string `json:"actions"`
	}
	access := []resourceActions{}
	for _, scope := range q["scope"] {
		// TYPE:NAME:ACTIONS, NAME possibly with a port's colon.
		typ, rest, _ := strings.Cut(scope, ":")
		i := strings.LastIndex(rest, ":")
		if i < 0 {
			http.Error(w, "bad scope "+scope, http.StatusBadRequest)
			return
		}
		actions := strings.Split(rest[i+1:], ",")
		for _, a := range actions {
			if u.actions != nil && !slices.Contains(u.actions, a) {
				http.Error(w, fmt.Sprintf("%s may not %s", name, a), http.StatusUnauthorized)
				return
			}
		}
		access = append(access, resourceActions{Type: typ, Name: rest[:i], Actions: actions})
	}
	s.mu.Lock()
	s.asked = append(s.asked, strings.Join(q["scope"], " "))
	s.mu.Unlock()
	now := time.Now()
	token, err := s.sign(map[string]any{"iss": s.issuer, "sub": name, "aud": s.service, "exp": now.Add(5 * time.Minute).Unix(),
		"nbf": now.Add(-time.Minute).Unix(), "iat": now.Unix(), "jti": fmt.Sprint(now.UnixNano()), "access": access})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"token": token, "expires_in": 300, "issued_at": now.UTC().Format(time.RFC3339)})
}

// sign makes a compact JSON Web Token of claims: ES256, the signature
// the 32-byte r and s, the certificate in the header.
func (s *tokenService) sign(claims map[string]any) (string, error) {
	header, err := json.Marshal(map[string]any{"typ": "JWT", "alg": "ES256", "x5c": []string{base64.StdEncoding.EncodeToString(s.cert)}})
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	signed := enc.EncodeToString(header) + "." + enc.EncodeToString(body)
	sum := sha256.Sum256([]byte(signed))
	r, ss, err := ecdsa.Sign(rand.Reader, s.key, sum[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	ss.FillBytes(sig[32:])
	return signed + "." + enc.EncodeToString(sig), nil
}

// AddUser adds an account to a registry started by StartTokens, whose
// tokens give at most actions ("pull", "push", "delete", "*"); asking for
// more is refused.
func (r *Registry) AddUser(name, password string, actions ...string) {
	r.tokens.mu.Lock()
	defer r.tokens.mu.Unlock()
	r.tokens.users[name] = tokenUser{password: password, actions: actions}
}

// TokensAsked lists the scopes of every token the service of a registry
// started by StartTokens gave, each token's space-separated.
func (r *Registry) TokensAsked() []string {
	r.tokens.mu.Lock()
	defer r.tokens.mu.Unlock()
	return slices.Clone(r.tokens.asked)
}
