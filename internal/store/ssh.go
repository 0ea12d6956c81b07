package store

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

func init() {
	// A remote's host and port are the URL's: never a user's ssh_config
	// on the machine Scion runs on.
	gitssh.DefaultSSHConfig = nil
}

// sshKeyAuth authenticates to an ssh remote with a private key, and
// checks the remote's host key against known_hosts lines (never trust on
// first use).
type sshKeyAuth struct {
	user    string
	signer  ssh.Signer
	hostKey ssh.HostKeyCallback
	// algorithms are the host key types known_hosts has for the host, so
	// that the remote shows one of those (not another type it also has).
	algorithms []string
	timeout    time.Duration
}

// Name is go-git's name of the method.
func (a *sshKeyAuth) Name() string { return gitssh.PublicKeysName }

// String never shows the key.
func (a *sshKeyAuth) String() string { return "ssh key for " + a.user }

// ClientConfig is the configuration of one connection.
func (a *sshKeyAuth) ClientConfig() (*ssh.ClientConfig, error) {
	return &ssh.ClientConfig{User: a.user, Auth: []ssh.AuthMethod{ssh.PublicKeys(a.signer)},
		HostKeyCallback: a.hostKey, HostKeyAlgorithms: a.algorithms, Timeout: a.timeout}, nil
}

// sshAuth is the authentication to an ssh endpoint from credentials: the
// private key (decrypted with its passphrase) and known_hosts, both
// required.
func sshAuth(ep *transport.Endpoint, c Credentials, timeout time.Duration) (*sshKeyAuth, error) {
	if len(c.SSHKey) == 0 || len(c.KnownHosts) == 0 {
		return nil, fmt.Errorf("an ssh remote needs a private key and known_hosts (host keys are always checked): %w", ErrAuthentication)
	}
	var signer ssh.Signer
	var err error
	if c.SSHPassphrase != "" {
		signer, err = ssh.ParsePrivateKeyWithPassphrase(c.SSHKey, []byte(c.SSHPassphrase))
	} else {
		signer, err = ssh.ParsePrivateKey(c.SSHKey)
	}
	var missing *ssh.PassphraseMissingError
	switch {
	case errors.As(err, &missing):
		return nil, fmt.Errorf("the private key is encrypted and no passphrase is given: %w", ErrAuthentication)
	case errors.Is(err, x509.IncorrectPasswordError):
		return nil, fmt.Errorf("the private key cannot be decrypted with the passphrase given: %w", ErrAuthentication)
	case err != nil:
		return nil, fmt.Errorf("the private key cannot be read (PEM or OpenSSH format expected): %w", ErrAuthentication)
	}
	db, err := knownHostsDB(c.KnownHosts)
	if err != nil {
		return nil, err
	}
	user := ep.User
	if user == "" {
		user = "git"
	}
	port := ep.Port
	if port <= 0 {
		port = gitssh.DefaultPort
	}
	hostPort := net.JoinHostPort(ep.Host, strconv.Itoa(port))
	algorithms := db.HostKeyAlgorithms(hostPort)
	if len(algorithms) == 0 {
		return nil, fmt.Errorf("known_hosts has no key of %s (for a port other than 22, the line names [host]:port): %w", hostPort, ErrAuthentication)
	}
	return &sshKeyAuth{user: user, signer: signer, hostKey: db.HostKeyCallback(), algorithms: algorithms, timeout: timeout}, nil
}

// hostKeyDB is what Scion asks of known_hosts.
type hostKeyDB interface {
	HostKeyCallback() ssh.HostKeyCallback
	HostKeyAlgorithms(hostWithPort string) []string
}

// knownHostsDB parses known_hosts lines (through a file of its own,
// removed at once: the parser reads files).
func knownHostsDB(lines []byte) (hostKeyDB, error) {
	dir, err := os.MkdirTemp("", "scion-known-hosts-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	file := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(file, lines, 0o600); err != nil {
		return nil, err
	}
	db, err := gitssh.NewKnownHostsDb(file)
	if err != nil {
		return nil, fmt.Errorf("known_hosts cannot be read: %s: %w", Shorten(err.Error(), 200), ErrAuthentication)
	}
	return db, nil
}

// hostKeyError says what a failed host key check means, or "" when err is
// not one.
func hostKeyError(err error) string {
	var keyErr *knownhosts.KeyError
	var revoked *knownhosts.RevokedError
	switch {
	case errors.As(err, &revoked):
		return "the remote's host key is revoked in known_hosts"
	case errors.As(err, &keyErr) && len(keyErr.Want) == 0:
		return "the remote's host key is not in known_hosts (Scion never trusts a host key on first use: add the host's line, ssh-keyscan shows it)"
	case errors.As(err, &keyErr):
		return "the remote's host key differs from the one known_hosts has for it (the host changed its key, or something else answers in its place)"
	}
	return ""
}

// checkedTransport asks check before each session (a connection) with the
// remote: the egress policy for ssh, whose connections go-git dials
// itself.
type checkedTransport struct {
	transport.Transport
	check func() error
}

// NewUploadPackSession checks, then opens a fetch session.
func (t checkedTransport) NewUploadPackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.UploadPackSession, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	return t.Transport.NewUploadPackSession(ep, auth)
}

// NewReceivePackSession checks, then opens a push session.
func (t checkedTransport) NewReceivePackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.ReceivePackSession, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	return t.Transport.NewReceivePackSession(ep, auth)
}

// sshTransport is go-git's ssh transport, each connection checked with
// checkHost (nil: none) first.
func sshTransport(ep *transport.Endpoint, checkHost func(ctx context.Context, host string) error, timeout time.Duration) transport.Transport {
	tr := gitssh.NewClient(nil)
	if checkHost == nil {
		return tr
	}
	return checkedTransport{Transport: tr, check: func() error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return checkHost(ctx, ep.Host)
	}}
}
