package e2e

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
	"github.com/scion-dev/scion/internal/testutil/registry"
	"github.com/scion-dev/scion/internal/testutil/sshserver"
)

// repoReady waits for a Repository to be Ready.
func repoReady(g Gomega, ns, name string) {
	g.Eventually(func(g Gomega) {
		r := &configv1alpha1.Repository{}
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, r)).To(Succeed())
		c := meta.FindStatusCondition(r.Status.Conditions, configv1alpha1.ReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
}

// Repositories as teams run them: git over ssh with a key and
// known_hosts from the Secret Porch and Flux use (identity or
// ssh-privatekey, known_hosts, password as the key's passphrase), and a
// registry whose certificate a private authority signed (caFile). Each
// wrong Secret is named on its Repository only; the others stay Ready.
func TestRepositoryCredentials(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "creds")
	srv := sshserver.Start(t)
	bare := gitserver.InitBare(t, t.TempDir(), "fleet.git")
	gitserver.SeedRevisions(t, bare, 2, 1, 1)

	secret := func(name string, data map[string][]byte, typ corev1.SecretType) {
		t.Helper()
		g.Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: typ, Data: data})).To(Succeed())
	}
	repository := func(name string, spec configv1alpha1.RepositorySpec) {
		t.Helper()
		g.Expect(k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec})).To(Succeed())
	}
	git := func(url, secret string) configv1alpha1.RepositorySpec {
		return configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: url, SecretRef: &configv1alpha1.SecretRef{Name: secret}}}
	}

	// Flux's keys, and Porch's (a kubernetes.io/ssh-auth Secret) with an
	// encrypted key and its passphrase.
	secret("flux-ssh", map[string][]byte{"identity": srv.Key, "known_hosts": srv.KnownHosts}, corev1.SecretTypeOpaque)
	repository("over-ssh", git(srv.URL(bare), "flux-ssh"))
	encrypted, pubFile := srv.NewKey(t, "team", "team passphrase")
	srv.Authorize(t, pubFile)
	secret("porch-ssh", map[string][]byte{corev1.SSHAuthPrivateKey: encrypted, "known_hosts": srv.KnownHosts, "password": []byte("team passphrase")}, corev1.SecretTypeSSHAuth)
	repository("over-ssh-encrypted", git(srv.URL(bare), "porch-ssh"))
	repoReady(g, ns, "over-ssh")
	repoReady(g, ns, "over-ssh-encrypted")
	g.Eventually(func(g Gomega) {
		list := &porchv1alpha1.PackageRevisionList{}
		g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns), client.MatchingFields{"spec.repository": "over-ssh"})).To(Succeed())
		g.Expect(list.Items).NotTo(BeEmpty())
	}, time.Minute, 200*time.Millisecond).Should(Succeed())

	// Bad Secrets: each named on its own Repository.
	secret("no-known-hosts", map[string][]byte{"identity": srv.Key}, corev1.SecretTypeOpaque)
	repository("bad-no-known-hosts", git(srv.URL(bare), "no-known-hosts"))
	g.Expect(repoNotReady(g, ns, "bad-no-known-hosts", "")).To(ContainSubstring(`secret ` + ns + `/no-known-hosts named by spec.git.secretRef has an ssh key but no "known_hosts": host keys are always checked`))
	secret("wrong-passphrase", map[string][]byte{"identity": encrypted, "known_hosts": srv.KnownHosts, "password": []byte("guess")}, corev1.SecretTypeOpaque)
	repository("bad-passphrase", git(srv.URL(bare), "wrong-passphrase"))
	g.Expect(repoNotReady(g, ns, "bad-passphrase", "")).To(ContainSubstring("the private key cannot be decrypted with the passphrase given"))
	secret("moved-host", map[string][]byte{"identity": srv.Key, "known_hosts": srv.NewHostKeyLine(t)}, corev1.SecretTypeOpaque)
	repository("bad-host-key", git(srv.URL(bare), "moved-host"))
	g.Expect(repoNotReady(g, ns, "bad-host-key", "")).To(ContainSubstring("the remote's host key differs from the one known_hosts has for it"))
	// git's scp-like form is accepted (port 22, where nothing answers
	// here); a URL of no known form is refused at admission.
	repository("scp-like", git("git@127.0.0.1:fleet.git", "flux-ssh"))
	g.Expect(repoNotReady(g, ns, "scp-like", "")).To(ContainSubstring("known_hosts has no key of 127.0.0.1:22"))
	err := k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nonsense"}, Spec: git("git@127.0.0.1", "")})
	g.Expect(err).To(MatchError(ContainSubstring("spec.git.repo: Invalid value: \"git@127.0.0.1\": must be an https://, http://, ssh:// or file:// URL, or user@host:path")))
	repoReady(g, ns, "over-ssh")

	// A registry whose certificate the test's own authority signed: Ready
	// with caFile beside its credentials, refused without.
	reg := registry.Start(t)
	caPEM, err := os.ReadFile(reg.CAFile)
	g.Expect(err).NotTo(HaveOccurred())
	oci := func(secret string) configv1alpha1.RepositorySpec {
		return configv1alpha1.RepositorySpec{Type: configv1alpha1.OCIRepositoryType, OCI: &configv1alpha1.OCIRepository{Registry: reg.Host + "/fleet", SecretRef: &configv1alpha1.SecretRef{Name: secret}}}
	}
	secret("registry-ca", map[string][]byte{"username": []byte(reg.Username), "password": []byte(reg.Password), "caFile": caPEM}, corev1.SecretTypeOpaque)
	repository("registry", oci("registry-ca"))
	secret("registry-no-ca", map[string][]byte{"username": []byte(reg.Username), "password": []byte(reg.Password)}, corev1.SecretTypeOpaque)
	repository("registry-untrusted", oci("registry-no-ca"))
	repoReady(g, ns, "registry")
	msg := repoNotReady(g, ns, "registry-untrusted", "")
	g.Expect(msg).To(ContainSubstring("its TLS certificate is not signed by an authority Scion trusts (a private authority: its certificate goes in the Secret's caFile)"))
	g.Expect(strings.Contains(msg, "scion-test")).To(BeFalse(), "nothing of the certificate's: %s", msg)
}
