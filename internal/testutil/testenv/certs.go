package testenv

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// FrontProxyUser is the common name of the client certificate
// kube-apiserver presents to aggregated API servers (its
// --requestheader-allowed-names).
const FrontProxyUser = "front-proxy-client"

// authority is a certificate authority made for one control plane.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// newAuthority makes a self-signed certificate authority.
func newAuthority(name string) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// issue signs a certificate for name: a client certificate, or a serving
// one for the DNS names given.
func (a *authority) issue(name string, serial int64, dnsNames ...string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	usage := x509.ExtKeyUsageClientAuth
	if len(dnsNames) > 0 {
		usage = x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     dnsNames,
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// frontProxy writes, into dir, the front proxy's certificate authority and
// the client certificate kube-apiserver presents to aggregated API
// servers, and returns the kube-apiserver flags that use them.
func frontProxy(dir string) (map[string]string, error) {
	ca, err := newAuthority("scion-test-front-proxy-ca")
	if err != nil {
		return nil, err
	}
	cert, key, err := ca.issue(FrontProxyUser, 2)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{"front-proxy-ca.crt": ca.pem, "front-proxy-client.crt": cert, "front-proxy-client.key": key}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, fmt.Errorf("writing the front proxy's %s: %w", name, err)
		}
	}
	return map[string]string{
		"requestheader-client-ca-file":       filepath.Join(dir, "front-proxy-ca.crt"),
		"requestheader-allowed-names":        FrontProxyUser,
		"requestheader-username-headers":     "X-Remote-User",
		"requestheader-uid-headers":          "X-Remote-Uid",
		"requestheader-group-headers":        "X-Remote-Group",
		"requestheader-extra-headers-prefix": "X-Remote-Extra-",
		"proxy-client-cert-file":             filepath.Join(dir, "front-proxy-client.crt"),
		"proxy-client-key-file":              filepath.Join(dir, "front-proxy-client.key"),
	}, nil
}

// ServingCert makes a certificate authority and a serving certificate
// signed by it for the given DNS names: what an APIService's caBundle and
// the aggregated server it points at need.
func ServingCert(dnsNames ...string) (caPEM, certPEM, keyPEM []byte, err error) {
	ca, err := newAuthority("scion-test-serving-ca")
	if err != nil {
		return nil, nil, nil, err
	}
	certPEM, keyPEM, err = ca.issue(dnsNames[0], 3, dnsNames...)
	return ca.pem, certPEM, keyPEM, err
}
