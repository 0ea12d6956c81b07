package e2e

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

func setup(t *testing.T) (string, string, string) {
	t.Helper()
	ctx := context.Background()
	ns := env.Namespace(t, "e2e")
	root := t.TempDir()
	bares := map[string]string{}
	for name, deployment := range map[string]bool{"catalog": false, "cluster-01": true} {
		bares[name] = gitserver.InitBare(t, root, name+".git")
		repo := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: configv1alpha1.RepositorySpec{Deployment: deployment, Git: &configv1alpha1.GitRepository{Repo: "file://" + bares[name], CreateBranch: true}}}
		if err := k8sClient.Create(ctx, repo); err != nil {
			t.Fatal(err)
		}
	}
	return ns, bares["catalog"], bares["cluster-01"]
}

func TestRpkg(t *testing.T) {
	g := NewWithT(t)
	ns, catalog, cluster := setup(t)

	out, err := scion(ns, "rpkg", "init", "base", "--repository", "catalog", "--workspace", "v1", "--description", "the base package")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("catalog.base.v1 created\n"))
	out, err = scion(ns, "rpkg", "propose", "catalog.base.v1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("catalog.base.v1 is Proposed\n"))
	out, err = scion(ns, "rpkg", "approve", "catalog.base.v1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("catalog.base.v1 is Published\n"))
	review := &authenticationv1.SelfSubjectReview{}
	g.Expect(k8sClient.Create(context.Background(), review)).To(Succeed())
	g.Expect(gitserver.Git(t, catalog, "for-each-ref", "--format=%(taggername)", "refs/tags/base/v1")).To(Equal(review.Status.UserInfo.Username), "the authenticated user is the approver")

	// Clone into the deployment repository, then edit it with pull and push.
	out, err = scion(ns, "rpkg", "clone", "catalog.base.v1", "base", "--repository", "cluster-01", "--workspace", "ws")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("cluster-01.base.ws created\n"))
	// -o wide names the upstream and version the clone carries (its own
	// revision numbers are cluster-01's).
	g.Eventually(func() string {
		out, _ := scion(ns, "rpkg", "get", "cluster-01.base.ws", "-o", "wide")
		return out
	}).Should(MatchRegexp(`(?m)^NAME .* READY\s+UPSTREAM\s+COMMIT .*\ncluster-01\.base\.ws\s.*\sbase v1\s`))
	dir := filepath.Join(t.TempDir(), "base")
	out, err = scion(ns, "rpkg", "pull", "cluster-01.base.ws", dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HavePrefix("pulled cluster-01.base.ws (commit "))
	// Someone else pulls too, and pushes first.
	other := filepath.Join(t.TempDir(), "other")
	_, err = scion(ns, "rpkg", "pull", "cluster-01.base.ws", other)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(other, "notes.md"), []byte("# notes\n"), 0o644)).To(Succeed())
	_, err = scion(ns, "rpkg", "push", "cluster-01.base.ws", other)
	g.Expect(err).NotTo(HaveOccurred())
	theirs := gitserver.Git(t, cluster, "rev-parse", "drafts/base/ws")
	kf, err := os.ReadFile(filepath.Join(dir, "Kptfile"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(kf)).To(ContainSubstring("ref: base/v1"))
	edited := strings.Replace(string(kf), "info:\n", "info:\n  readinessGates:\n  - conditionType: example.com/approved\n", 1)
	g.Expect(edited).NotTo(Equal(string(kf)))
	g.Expect(os.WriteFile(filepath.Join(dir, "Kptfile"), []byte(edited), 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\ndata:\n  owner: cluster-01\n"), 0o644)).To(Succeed())
	// The first pull's push would overwrite their commit: refused, and
	// nothing is lost.
	_, err = scion(ns, "rpkg", "push", "cluster-01.base.ws", dir)
	g.Expect(err).To(MatchError(MatchRegexp(`cluster-01.base.ws changed since .*/base was pulled \(read at commit [0-9a-f]{12}, now ` + theirs[:12] + `: ` + theirs[:12] + ` .*: Update through the API by .*\); nothing was pushed. Pull it into another folder, merge your edits into it, and push from there`)))
	g.Expect(gitserver.Git(t, cluster, "rev-parse", "drafts/base/ws")).To(Equal(theirs))
	// Merged the way the message says: pull anew, redo the edits, push.
	merged := filepath.Join(t.TempDir(), "merged")
	_, err = scion(ns, "rpkg", "pull", "cluster-01.base.ws", merged)
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range []string{"Kptfile", "cm.yaml"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(os.WriteFile(filepath.Join(merged, f), data, 0o644)).To(Succeed())
	}
	dir = merged
	out, err = scion(ns, "rpkg", "push", "cluster-01.base.ws", dir)
	g.Expect(err).NotTo(HaveOccurred())
	pushed := gitserver.Git(t, cluster, "rev-parse", "drafts/base/ws")
	g.Expect(gitserver.Git(t, cluster, "show", "drafts/base/ws:base/notes.md")).To(Equal("# notes"), "their commit is kept")
	g.Expect(gitserver.Git(t, cluster, "ls-tree", "--name-only", "drafts/base/ws", "base/")).NotTo(ContainSubstring(".scion-pulled"))
	g.Expect(out).To(ContainSubstring("(commit " + pushed[:12] + ")"))
	g.Eventually(func(g Gomega) {
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cluster-01.base.ws"}, pr)).To(Succeed())
		g.Expect(pr.Status.Commit).To(Equal(pushed))
		g.Expect(pr.Spec.ReadinessGates).To(HaveLen(1))
	}).Should(Succeed(), "the push makes the Repository sync at once")

	// Approval into the deployment repository waits for the gate.
	_, err = scion(ns, "rpkg", "propose", "cluster-01.base.ws")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = scion(ns, "rpkg", "approve", "cluster-01.base.ws")
	g.Expect(err).To(MatchError(ContainSubstring("cluster-01.base.ws: spec.lifecycle: cannot publish cluster-01.base.ws into deployment repository cluster-01: readiness gates not met: example.com/approved (not set). Nothing was recorded: approve again once they are True")))
	out, err = scion(ns, "rpkg", "get", "cluster-01.base.ws", "-o", "yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("lifecycle: Proposed"), "a refused approval is not recorded")
	g.Expect(out).NotTo(ContainSubstring("approved-by"))
	out, err = scion(ns, "rpkg", "condition", "list", "cluster-01.base.ws")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(MatchRegexp(`example.com/approved\s+-\s+true\s+-\s+not set yet`))
	out, err = scion(ns, "rpkg", "condition", "set", "cluster-01.base.ws", "example.com/approved", "True", "--reason", "Reviewed")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("cluster-01.base.ws: example.com/approved=True\n"))
	out, err = scion(ns, "rpkg", "approve", "cluster-01.base.ws")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("cluster-01.base.ws is Published\n"))

	out, err = scion(ns, "rpkg", "get", "--repository", "cluster-01")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(MatchRegexp(`(?m)^NAME\s+PACKAGE\s+WORKSPACE\s+REVISION\s+LATEST\s+LIFECYCLE\s+REPOSITORY\s+READY$`))
	g.Expect(out).To(MatchRegexp(`(?m)^cluster-01\.base\.ws\s+base\s+ws\s+1\s+true\s+Published\s+cluster-01\s+True$`))
	// porchctl's --name: package names containing it.
	out, err = scion(ns, "rpkg", "get", "--name", "as")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("cluster-01.base.ws"))
	out, err = scion(ns, "rpkg", "get", "--name", "nothing-like-it")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).NotTo(ContainSubstring("base"))

	// A new upstream revision, and an upgrade that keeps the local edit.
	_, err = scion(ns, "rpkg", "copy", "catalog.base.v1", "--workspace", "v2")
	g.Expect(err).NotTo(HaveOccurred())
	updir := filepath.Join(t.TempDir(), "up")
	_, err = scion(ns, "rpkg", "pull", "catalog.base.v2", updir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(updir, "README.md"), []byte("# base, version 2\n"), 0o644)).To(Succeed())
	_, err = scion(ns, "rpkg", "push", "catalog.base.v2", updir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "catalog.base.v2"}, pr)).To(Succeed())
		g.Expect(pr.Status.Commit).To(Equal(gitserver.Git(t, catalog, "rev-parse", "drafts/base/v2")))
	}).Should(Succeed())
	_, err = scion(ns, "rpkg", "propose", "catalog.base.v2")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = scion(ns, "rpkg", "approve", "catalog.base.v2")
	g.Expect(err).NotTo(HaveOccurred())
	out, err = scion(ns, "rpkg", "upgrade", "cluster-01.base.ws", "--upstream", "catalog.base.v2", "--workspace", "ws2")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(Equal("cluster-01.base.ws2 created\n"))
	g.Expect(gitserver.Git(t, cluster, "show", "drafts/base/ws2:base/README.md")).To(Equal("# base, version 2"))
	g.Expect(gitserver.Git(t, cluster, "show", "drafts/base/ws2:base/cm.yaml")).To(ContainSubstring("owner: cluster-01"), "the local edit survives the upgrade")
	g.Expect(gitserver.Git(t, cluster, "show", "drafts/base/ws2:base/Kptfile")).To(ContainSubstring("ref: base/v2"))
	// porchctl's way: --revision N of the same upstream package, or its
	// latest without it.
	out, err = scion(ns, "rpkg", "upgrade", "cluster-01.base.ws", "--revision", "2", "--workspace", "ws3")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(gitserver.Git(t, cluster, "show", "drafts/base/ws3:base/Kptfile")).To(ContainSubstring("ref: base/v2"))
	out, err = scion(ns, "rpkg", "upgrade", "cluster-01.base.ws", "--workspace", "ws4")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(gitserver.Git(t, cluster, "show", "drafts/base/ws4:base/README.md")).To(Equal("# base, version 2"))
	_, err = scion(ns, "rpkg", "upgrade", "cluster-01.base.ws", "--revision", "9", "--workspace", "ws5")
	g.Expect(err).To(MatchError("base in catalog has no published revision 9"))
	_, err = scion(ns, "rpkg", "delete", "cluster-01.base.ws3", "cluster-01.base.ws4")
	g.Expect(err).NotTo(HaveOccurred())

	// Delete removes the draft from git too.
	out, err = scion(ns, "rpkg", "delete", "cluster-01.base.ws2")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("cluster-01.base.ws2 deleted (from git too)\n"))
	g.Expect(gitserver.Git(t, cluster, "branch", "--list", "drafts/*")).To(BeEmpty())

	// Errors name the revision.
	_, err = scion(ns, "rpkg", "propose", "nope")
	g.Expect(err).To(MatchError("package revision nope not found in namespace " + ns))
	_, err = scion(ns, "rpkg", "reject", "cluster-01.base.ws")
	g.Expect(err).To(MatchError("cluster-01.base.ws is Published; only Proposed and DeletionProposed revisions can be rejected"))
}

// The floating-tag workflow, end to end and as docs/lifecycle.md tells
// it: publish two revisions, tag the first stable, a PackageVariant
// follows stable, move the tag, the variant's draft follows.
func TestRpkgTag(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, catalog, cluster := setup(t)
	publish := func(ws string) {
		t.Helper()
		var err error
		if ws == "v1" {
			_, err = scion(ns, "rpkg", "init", "base", "--repository", "catalog", "--workspace", ws, "--description", "the base package")
		} else {
			_, err = scion(ns, "rpkg", "copy", "catalog.base.v1", "--workspace", ws)
		}
		g.Expect(err).NotTo(HaveOccurred())
		_, err = scion(ns, "rpkg", "propose", "catalog.base."+ws)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = scion(ns, "rpkg", "approve", "catalog.base."+ws)
		g.Expect(err).NotTo(HaveOccurred())
	}
	publish("v1")
	publish("v2")

	out, err := scion(ns, "rpkg", "tag", "base", "stable", "--repository", "catalog", "--revision", "1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("base/stable now points at revision 1\n"))
	out, err = scion(ns, "rpkg", "tag", "base", "--repository", "catalog")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(MatchRegexp(`^TAG\s+REVISION\nstable\s+1\n$`))

	pv := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: "base-stable", Namespace: ns}, Spec: configv1alpha1.PackageVariantSpec{
		Upstream:   &configv1alpha1.Upstream{Repo: "catalog", Package: "base", Tag: "stable"},
		Downstream: &configv1alpha1.Downstream{Repo: "cluster-01", Package: "base"},
	}}
	g.Expect(k8sClient.Create(ctx, pv)).To(Succeed())
	v1 := gitserver.Git(t, catalog, "rev-parse", "base/v1^{commit}")
	v2 := gitserver.Git(t, catalog, "rev-parse", "base/v2^{commit}")
	draftLock := func() string {
		kf, err := gitserverGit(cluster, "show", "drafts/base/packagevariant-1:base/Kptfile")
		if err != nil {
			return ""
		}
		return kf
	}
	g.Eventually(draftLock, "60s").Should(ContainSubstring("commit: "+v1), "the variant follows stable at revision 1")

	out, err = scion(ns, "rpkg", "tag", "base", "stable", "--repository", "catalog", "--revision", "2")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("base/stable moved from revision 1 to 2\n"))
	g.Eventually(draftLock, "60s").Should(ContainSubstring("commit: "+v2), "the variant follows the tag to revision 2")

	// Bad input says what to do.
	_, err = scion(ns, "rpkg", "tag", "base", "stable", "--repository", "catalog")
	g.Expect(err).To(MatchError("--revision is required with a tag: the published revision number to point it at"))
	_, err = scion(ns, "rpkg", "tag", "base", "stable", "--repository", "catalog", "--revision", "-2")
	g.Expect(err).To(MatchError("--revision must be a published revision number, 1 or more, not -2"))
	out, err = scion(ns, "rpkg", "tag", "other", "--repository", "catalog")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal("other has no floating tags in catalog\n"))
	_, err = scion(ns, "rpkg", "tag", "base", "stable", "--repository", "catalog", "--revision", "9")
	g.Expect(err).To(MatchError(ContainSubstring("package base revision v9 is not published")))
	_, err = scion(ns, "rpkg", "tag", "base", "v3", "--repository", "catalog", "--revision", "1")
	g.Expect(err).To(MatchError(ContainSubstring(`invalid floating tag "v3"`)))
	_, err = scion(ns, "rpkg", "tag", "base", "stable", "--repository", "nowhere", "--revision", "1")
	g.Expect(err).To(MatchError(ContainSubstring(`"nowhere" not found`)))
}

// gitserverGit runs git in dir and returns its output, or the error (for
// polling while a ref does not exist yet).
func gitserverGit(dir string, args ...string) (string, error) {
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	return string(out), err
}

// A Repository whose git server does not answer is reported at once
// (nothing is created), and a revision the controller has not shown yet
// is listed by repository as kubectl lists it.
func TestRpkg_unavailableRemote(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "unavailable")
	// A port nothing listens on: connection refused, at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	addr := ln.Addr().String()
	g.Expect(ln.Close()).To(Succeed())
	down := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "down", Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "http://" + addr + "/down.git"}}}
	g.Expect(k8sClient.Create(ctx, down)).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur := &configv1alpha1.Repository{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(down), cur)).To(Succeed())
		g.Expect(meta.FindStatusCondition(cur.Status.Conditions, configv1alpha1.ReadyCondition)).To(HaveField("Reason", configv1alpha1.RemoteUnavailableReason))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())

	_, err = scion(ns, "rpkg", "init", "app", "--repository", "down", "--workspace", "ws")
	g.Expect(err).To(MatchError(ContainSubstring("repository down: ")))
	g.Expect(err).To(MatchError(ContainSubstring("nothing was created: the repository's remote is unavailable")))
	list := &porchv1alpha1.PackageRevisionList{}
	g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	g.Expect(list.Items).To(BeEmpty())

	// Created with kubectl for a repository not registered yet: not
	// shown by the controller (no labels), listed all the same.
	pr := &porchv1alpha1.PackageRevision{ObjectMeta: metav1.ObjectMeta{Name: "later.app.ws", Namespace: ns},
		Spec: porchv1alpha1.PackageRevisionSpec{PackageName: "app", Repository: "later", WorkspaceName: "ws", Lifecycle: porchv1alpha1.LifecycleDraft}}
	g.Expect(k8sClient.Create(ctx, pr)).To(Succeed())
	out, err := scion(ns, "rpkg", "get", "--repository", "later")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring("later.app.ws"))
	out, err = scion(ns, "rpkg", "get", "--repository", "down")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).NotTo(ContainSubstring("later.app.ws"))
}
