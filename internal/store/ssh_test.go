package store

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/scion-dev/scion/internal/egress"
	"github.com/scion-dev/scion/internal/localca"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
	"github.com/scion-dev/scion/internal/testutil/sshserver"
)

// A repository over ssh, served by OpenSSH's sshd and git's own
// upload-pack and receive-pack: a key and known_hosts open it, and the
// lifecycle reaches git; each way the credentials can be wrong is named,
// and the egress policy is asked before each connection.
func TestRepository_ssh(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := sshserver.Start(t)
	bare := gitserver.InitBare(t, t.TempDir(), "repo.git")
	url := srv.URL(bare)
	creds := Credentials{SSHKey: srv.Key, KnownHosts: srv.KnownHosts}

	r := open(t, Options{URL: url, CreateBranch: true, Credentials: creds})
	d, err := r.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Contents: testPackage("app", 1)})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = r.Propose(ctx, "app", "ws", d.Commit, Proposal{})
	g.Expect(err).NotTo(HaveOccurred())
	pub, err := r.Publish(ctx, "app", "ws", "", "", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gitserver.Git(t, bare, "rev-parse", "app/v1^{commit}")).To(Equal(pub.Commit))
	g.Expect(strings.Count(srv.Log(), "Accepted publickey")).To(BeNumerically(">=", 2), "fetches and pushes went through sshd: %s", srv.Log())

	// An encrypted key opens with its passphrase only.
	encrypted, pubFile := srv.NewKey(t, "encrypted", "open sesame")
	srv.Authorize(t, pubFile)
	enc := Credentials{SSHKey: encrypted, SSHPassphrase: "open sesame", KnownHosts: srv.KnownHosts}
	r2 := open(t, Options{URL: url, Credentials: enc})
	revs, err := r2.List(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(revs).To(HaveLen(1))

	unauthorized, _ := srv.NewKey(t, "stranger", "")
	other := t.TempDir()
	for _, tc := range []struct {
		name  string
		creds Credentials
		want  string
	}{
		{"wrong passphrase", Credentials{SSHKey: encrypted, SSHPassphrase: "guess", KnownHosts: srv.KnownHosts}, "the private key cannot be decrypted with the passphrase given"},
		{"no passphrase", Credentials{SSHKey: encrypted, KnownHosts: srv.KnownHosts}, "the private key is encrypted and no passphrase is given"},
		{"no known_hosts", Credentials{SSHKey: srv.Key}, "an ssh remote needs a private key and known_hosts (host keys are always checked)"},
		{"no key", Credentials{KnownHosts: srv.KnownHosts}, "an ssh remote needs a private key and known_hosts"},
		{"not a key", Credentials{SSHKey: []byte("-----BEGIN NOTHING-----"), KnownHosts: srv.KnownHosts}, "the private key cannot be read"},
		{"known_hosts of another host", Credentials{SSHKey: srv.Key, KnownHosts: []byte("[127.0.0.1]:1 " + strings.SplitN(string(srv.KnownHosts), " ", 2)[1])}, "known_hosts has no key of 127.0.0.1:"},
		{"the host key changed", Credentials{SSHKey: srv.Key, KnownHosts: srv.NewHostKeyLine(t)}, "the remote's host key differs from the one known_hosts has for it"},
		{"a key the server does not know", Credentials{SSHKey: unauthorized, KnownHosts: srv.KnownHosts}, "the remote refused the ssh key"},
	} {
		_, err := Open(ctx, Options{URL: url, Credentials: tc.creds, CacheDir: other + "/" + strings.ReplaceAll(tc.name, " ", "-")})
		g.Expect(err).To(HaveOccurred(), tc.name)
		g.Expect(err.Error()).To(ContainSubstring(tc.want), tc.name)
		g.Expect(errors.Is(err, ErrAuthentication) || strings.Contains(tc.name, "host key")).To(BeTrue(), "%s: %v", tc.name, err)
		g.Expect(err.Error()).NotTo(ContainSubstring("open sesame"))
	}

	// The egress policy is asked before a connection: a denied address
	// is not dialled.
	policy, err := egress.New(nil, egress.DefaultDeny)
	g.Expect(err).NotTo(HaveOccurred())
	before := strings.Count(srv.Log(), "Connection from")
	_, err = Open(ctx, Options{URL: url, Credentials: creds, CacheDir: other + "/denied", CheckHost: policy.CheckHost})
	var denied *egress.DeniedError
	g.Expect(errors.As(err, &denied)).To(BeTrue(), "%v", err)
	g.Expect(denied.Addr).To(Equal(netip.MustParseAddr("127.0.0.1")))
	g.Expect(strings.Count(srv.Log(), "Connection from")).To(Equal(before), "nothing reached sshd")
}

// git's scp-like form (user@host:path) is an ssh URL: port 22, the user
// given.
func TestEndpoint_scpLike(t *testing.T) {
	g := NewWithT(t)
	ep, err := endpoint("git@git.example.com:team/blueprints.git")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ep.Protocol).To(Equal("ssh"))
	g.Expect(ep.User).To(Equal("git"))
	g.Expect(ep.Host).To(Equal("git.example.com"))
	g.Expect(ep.Path).To(Equal("team/blueprints.git"))
	_, err = endpoint("ftp://git.example.com/x.git")
	g.Expect(err).To(MatchError(ContainSubstring("only https://, http://, ssh:// (or user@host:path) and file:// are supported")))
}

// An https server whose certificate a private authority signed: trusted
// with the authority's certificate as the CA bundle, refused without it or
// with another authority's, naming the reason only.
func TestRepository_privateCA(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ca, err := localca.New("test CA")
	g.Expect(err).NotTo(HaveOccurred())
	root := t.TempDir()
	gitserver.InitBare(t, root, "repo.git")
	srv := gitserver.NewTLSServer(t, root, ca)
	url := srv.URLFor("repo.git")

	r := open(t, Options{URL: url, CreateBranch: true, Credentials: Credentials{CABundle: ca.PEM}})
	_, err = r.WriteDraft(ctx, DraftWrite{Package: "app", Workspace: "ws", Contents: testPackage("app", 1)})
	g.Expect(err).NotTo(HaveOccurred())

	other, err := localca.New("another CA")
	g.Expect(err).NotTo(HaveOccurred())
	for name, creds := range map[string]Credentials{"no CA bundle": {}, "another authority": {CABundle: other.PEM}} {
		_, err := Open(ctx, Options{URL: url, Credentials: creds, CacheDir: t.TempDir()})
		g.Expect(err).To(MatchError(ContainSubstring("its TLS certificate is not signed by an authority Scion trusts (a private authority: its certificate goes in the Secret's caFile)")), name)
		g.Expect(err.Error()).NotTo(ContainSubstring("test CA"), "no name of the certificate's")
	}
	_, err = Open(ctx, Options{URL: url, Credentials: Credentials{CABundle: []byte("not PEM")}, CacheDir: t.TempDir()})
	g.Expect(errors.Is(err, ErrCABundle)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(ContainSubstring("the CA bundle holds no PEM certificate")))
}
