package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgdiff"
	"github.com/scion-dev/scion/internal/rpkg"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

// A reviewer sees what proposals change without git credentials: a set's
// three proposals of an upstream bump, two making the same change and one
// where a person also edited the draft, are summarised as one change in
// two repositories and one that differs; one proposal's change against
// the revision it replaces, and its own edits against its upstream.
func TestRpkgDiff(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, _ := setup(t)
	root := t.TempDir()
	for _, name := range []string{"cluster-02", "cluster-03"} {
		bare := gitserver.InitBare(t, root, name+".git")
		g.Expect(k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: configv1alpha1.RepositorySpec{Deployment: true, Git: &configv1alpha1.GitRepository{Repo: "file://" + bare, CreateBranch: true}}})).To(Succeed())
	}
	run := func(args ...string) string {
		t.Helper()
		out, err := scion(ns, args...)
		g.Expect(err).NotTo(HaveOccurred(), "scion %v: %s", args, out)
		return out
	}
	edit := func(name, file, from, to string, pushArgs ...string) {
		t.Helper()
		dir := filepath.Join(t.TempDir(), "pkg")
		run("rpkg", "pull", name, dir)
		data, err := os.ReadFile(filepath.Join(dir, file))
		if from == "" || os.IsNotExist(err) {
			data, err = nil, nil
		}
		g.Expect(err).NotTo(HaveOccurred())
		next := string(data) + to
		if from != "" {
			next = strings.Replace(string(data), from, to, 1)
		}
		g.Expect(os.WriteFile(filepath.Join(dir, file), []byte(next), 0o644)).To(Succeed())
		run(append([]string{"rpkg", "push", name, dir}, pushArgs...)...)
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  color: blue\n"

	run("rpkg", "init", "base", "--repository", "catalog", "--workspace", "v1")
	edit("catalog.base.v1", "settings.yaml", "", cm)
	run("rpkg", "propose", "catalog.base.v1")
	run("rpkg", "approve", "catalog.base.v1")

	set := &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: configv1alpha2.PackageVariantSetSpec{
		Upstream: &configv1alpha1.Upstream{Repo: "catalog", Package: "base", Revision: "1"},
		Targets: []configv1alpha2.Target{{Repositories: []configv1alpha2.RepositoryTarget{
			{Name: "cluster-01", PackageNames: []string{"app"}}, {Name: "cluster-02", PackageNames: []string{"app"}}, {Name: "cluster-03", PackageNames: []string{"app"}}}}},
	}}
	g.Expect(k8sClient.Create(ctx, set)).To(Succeed())
	drafts := func(ws string) []string {
		var names []string
		for _, c := range []string{"cluster-01", "cluster-02", "cluster-03"} {
			names = append(names, c+".app."+ws)
		}
		g.Eventually(func(g Gomega) {
			for _, n := range names {
				pr := &porchv1alpha1.PackageRevision{}
				g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, pr)).To(Succeed())
				g.Expect(pr.Status.Commit).NotTo(BeEmpty())
			}
		}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		return names
	}
	first := drafts("packagevariant-1")

	// A first revision: everything added, against nothing.
	out := run("rpkg", "diff", first[0])
	g.Expect(out).To(HavePrefix("cluster-01.app.packagevariant-1 (app in cluster-01) against nothing (a first revision):\n"))
	g.Expect(out).To(ContainSubstring("added v1/ConfigMap/settings (settings.yaml)\n"))
	run(append([]string{"rpkg", "propose"}, first...)...)
	run(append([]string{"rpkg", "approve"}, first...)...)

	// The upstream moves: blue to green.
	run("rpkg", "copy", "catalog.base.v1", "--workspace", "v2")
	edit("catalog.base.v2", "settings.yaml", "color: blue", "color: green")
	run("rpkg", "propose", "catalog.base.v2")
	run("rpkg", "approve", "catalog.base.v2")
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(set), set)).To(Succeed())
	set.Spec.Upstream.Revision = "2"
	g.Expect(k8sClient.Update(ctx, set)).To(Succeed())
	second := drafts("packagevariant-2")
	g.Eventually(func(g Gomega) {
		for _, n := range second {
			d, err := (&rpkg.Client{Client: k8sClient, Namespace: ns}).Diff(ctx, n, "")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d.Diff.Resources).NotTo(BeEmpty(), "%s has the new upstream", n)
		}
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	// A person also adds a setting in cluster-03.
	edit("cluster-03.app.packagevariant-2", "settings.yaml", "color: green\n", "color: green\n  size: large\n", "-m", "Size cluster-03 large")
	// The person is the commit's author, with their message.
	review := &authenticationv1.SelfSubjectReview{}
	g.Expect(k8sClient.Create(ctx, review)).To(Succeed())
	g.Expect(gitserver.Git(t, filepath.Join(root, "cluster-03.git"), "log", "-1", "--format=%an|%s", "drafts/app/packagevariant-2")).To(Equal(review.Status.UserInfo.Username + "|Size cluster-03 large"))
	run(append([]string{"rpkg", "propose"}, second...)...)

	out = run("rpkg", "diff", "cluster-01.app.packagevariant-2")
	g.Expect(out).To(HavePrefix("cluster-01.app.packagevariant-2 (app in cluster-01) against cluster-01.app.packagevariant-1:\n"))
	g.Expect(out).To(ContainSubstring("modified v1/ConfigMap/settings (settings.yaml)\n--- a/v1/ConfigMap/settings\n+++ b/v1/ConfigMap/settings\n@@"))
	g.Expect(out).To(ContainSubstring("-  color: blue\n+  color: green\n"))
	g.Expect(out).To(ContainSubstring("modified Kptfile\n"), "the new upstream lock, apart")

	// The set's proposals, grouped.
	out = run("rpkg", "diff", "--variant-set", "app")
	g.Expect(out).To(HavePrefix("2 of 3 revisions make the most common change (repositories: cluster-01, cluster-02; revisions: cluster-01.app.packagevariant-2, cluster-02.app.packagevariant-2; against cluster-01.app.packagevariant-1, cluster-02.app.packagevariant-1):\n"))
	g.Expect(out).To(ContainSubstring("\n1 revision(s) differ:\n\n1 revision(s) make this change (repositories: cluster-03; revisions: cluster-03.app.packagevariant-2; against cluster-03.app.packagevariant-1):\n"))
	g.Expect(out).To(ContainSubstring("+  size: large\n"))
	js := run("rpkg", "diff", "--variant-set", "app", "-o", "json")
	sum := &rpkg.DiffSummary{}
	g.Expect(json.Unmarshal([]byte(js), sum)).To(Succeed())
	g.Expect(sum.Revisions).To(Equal(3))
	g.Expect(sum.Groups).To(HaveLen(2))
	g.Expect(sum.Groups[0].Repositories).To(Equal([]string{"cluster-01", "cluster-02"}))
	g.Expect(sum.Groups[1].Repositories).To(Equal([]string{"cluster-03"}))
	g.Expect(sum.Groups[0].Diff.Resources).To(ConsistOf(HaveField("Action", pkgdiff.Modified)))
	// The same by label: the variant's revisions carry its name.
	out = run("rpkg", "diff", "-l", configv1alpha1.PackageVariantLabel+" in (app-cluster-01-app,app-cluster-02-app)", "-o", "stat")
	g.Expect(out).To(HavePrefix("2 of 2 revisions make this change"))
	g.Expect(out).To(ContainSubstring("modified  v1/ConfigMap/settings | -1 +1\n"))

	// The downstream's own edits, against its upstream.
	out = run("rpkg", "diff", "cluster-03.app.packagevariant-2", "--against", "upstream")
	g.Expect(out).To(HavePrefix("cluster-03.app.packagevariant-2 (app in cluster-03) against catalog.base.v2:\n"))
	g.Expect(out).To(ContainSubstring("+  size: large\n"))
	g.Expect(out).NotTo(ContainSubstring("color: blue"))

	// Batch verbs: kubectl's names in, all approved together.
	names := run("rpkg", "get", "--variant-set", "app", "--lifecycle", "Proposed", "-o", "name")
	g.Expect(names).To(Equal("packagerevision.porch.kpt.dev/cluster-01.app.packagevariant-2\npackagerevision.porch.kpt.dev/cluster-02.app.packagevariant-2\npackagerevision.porch.kpt.dev/cluster-03.app.packagevariant-2\n"))
	out = run(append([]string{"rpkg", "approve"}, strings.Fields(names)[:2]...)...)
	g.Expect(out).To(Equal("cluster-01.app.packagevariant-2 is Published\ncluster-02.app.packagevariant-2 is Published\n"))
	out = run("rpkg", "approve", "--variant-set", "app")
	g.Expect(out).To(Equal("cluster-03.app.packagevariant-2 is Published\n"), "only the set's Proposed revision left")
	out = run("rpkg", "approve", "--variant-set", "app")
	g.Expect(out).To(Equal("no Proposed revisions selected\n"))
	_, err := scion(ns, "rpkg", "approve", "packagevariant.config.porch.kpt.dev/app-cluster-01-app")
	g.Expect(err).To(MatchError(ContainSubstring("is not a PackageRevision")))
	_, err = scion(ns, "rpkg", "approve")
	g.Expect(err).To(MatchError(ContainSubstring("name revisions, or select them with --selector, --variant-set or --rollout")))

	// Careless input.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"rpkg", "diff"}, "name a revision, or select many with --selector, --variant-set or --rollout"},
		{[]string{"rpkg", "diff", "nope"}, "package revision nope not found"},
		{[]string{"rpkg", "diff", first[0], "-o", "xml"}, `-o "xml": use unified, stat or json`},
		{[]string{"rpkg", "diff", first[0], "--variant-set", "app"}, "not both"},
		{[]string{"rpkg", "diff", first[0], "--against", "nope"}, "--against: package revision nope not found"},
		{[]string{"rpkg", "diff", "-l", "a in (", "-o", "stat"}, `--selector "a in ("`},
		{[]string{"rpkg", "diff", "catalog.base.v1", "--against", "upstream"}, "records no upstream commit"},
	} {
		_, err := scion(ns, c.args...)
		g.Expect(err).To(MatchError(ContainSubstring(c.want)), "%v", c.args)
	}
}
