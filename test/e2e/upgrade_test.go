package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

// A group (app and app-config) moved to its next revision in one command:
// scion rpkg upgrade --variant-set edits the set's upstreams once, every
// variant drafts the upgrade, and scion rpkg diff summarises the drafts. A
// revision that is not published, or a selection of revisions no variant
// made, changes nothing.
func TestRpkgUpgrade_bulk(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, _ := setup(t)
	bare := gitserver.InitBare(t, t.TempDir(), "cluster-02.git")
	g.Expect(k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "cluster-02", Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Deployment: true, Git: &configv1alpha1.GitRepository{Repo: "file://" + bare, CreateBranch: true}}})).To(Succeed())
	run := func(args ...string) string {
		t.Helper()
		out, err := scion(ns, args...)
		g.Expect(err).NotTo(HaveOccurred(), "scion %v: %s", args, out)
		return out
	}
	for _, p := range []string{"app", "app-config"} {
		run("rpkg", "init", p, "--repository", "catalog", "--workspace", "v1")
		run("rpkg", "propose", "catalog."+p+".v1")
		run("rpkg", "approve", "catalog."+p+".v1")
		run("rpkg", "copy", "catalog."+p+".v1", "--workspace", "v2")
		dir := filepath.Join(t.TempDir(), p)
		run("rpkg", "pull", "catalog."+p+".v2", dir)
		g.Expect(os.WriteFile(filepath.Join(dir, "settings.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: "+p+"\ndata:\n  version: v2\n"), 0o644)).To(Succeed())
		run("rpkg", "push", "catalog."+p+".v2", dir)
		run("rpkg", "propose", "catalog."+p+".v2")
		run("rpkg", "approve", "catalog."+p+".v2")
	}
	set := &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Name: "platform", Namespace: ns}, Spec: configv1alpha2.PackageVariantSetSpec{
		Upstreams: []configv1alpha1.Upstream{{Repo: "catalog", Package: "app", Revision: "1"}, {Repo: "catalog", Package: "app-config", Revision: "1"}},
		Targets: []configv1alpha2.Target{{Repositories: []configv1alpha2.RepositoryTarget{{Name: "cluster-01"}, {Name: "cluster-02"}},
			Template: &configv1alpha2.PackageVariantTemplate{Labels: map[string]string{"release": "platform"}}}},
	}}
	g.Expect(k8sClient.Create(ctx, set)).To(Succeed())
	// drafts waits for the group's four drafts made from upstream ref.
	drafts := func(ref string) []string {
		var names []string
		g.Eventually(func(g Gomega) {
			names = nil
			list := &porchv1alpha1.PackageRevisionList{}
			g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"release": "platform"})).To(Succeed())
			for _, pr := range list.Items {
				if pr.Spec.Lifecycle == porchv1alpha1.LifecycleDraft && pr.Status.Commit != "" && pr.Status.UpstreamLock != nil && strings.HasSuffix(pr.Status.UpstreamLock.Git.Ref, "/"+ref) {
					names = append(names, pr.Name)
				}
			}
			g.Expect(names).To(HaveLen(4))
		}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		return names
	}
	first := drafts("v1")
	run(append([]string{"rpkg", "propose"}, first...)...)
	run(append([]string{"rpkg", "approve"}, first...)...)

	upstreams := func() []configv1alpha1.Upstream {
		cur := &configv1alpha2.PackageVariantSet{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(set), cur)).To(Succeed())
		return cur.Spec.Upstreams
	}
	// Not published: refused, nothing changed.
	out, err := scion(ns, "rpkg", "upgrade", "--variant-set", "platform", "--to", "9")
	g.Expect(err).To(MatchError("--to 9: no published revision 9 of catalog/app, catalog/app-config; nothing was changed"), out)
	g.Expect(upstreams()[0].Revision).To(Equal(configv1alpha1.RevisionNumber("1")))
	// A selection that takes in a revision no variant made: refused.
	pr := &porchv1alpha1.PackageRevision{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "catalog.app.v1"}, pr)).To(Succeed())
	patch := client.MergeFrom(pr.DeepCopy())
	pr.Labels["release"] = "platform"
	g.Expect(k8sClient.Patch(ctx, pr, patch)).To(Succeed())
	_, err = scion(ns, "rpkg", "upgrade", "-l", "release=platform", "--to", "2")
	g.Expect(err).To(MatchError(HavePrefix("catalog.app.v1: not made by a PackageVariant")))
	g.Expect(upstreams()[1].Revision).To(Equal(configv1alpha1.RevisionNumber("1")))
	_, err = scion(ns, "rpkg", "upgrade", "catalog.app.v1", "--variant-set", "platform", "--to", "2")
	g.Expect(err).To(MatchError("name one revision (NAME) or select many with --to: not both"))

	// The group moves: one edit of the set, four drafts of v2; a person
	// labelling the set meanwhile, as fast as the API server lets them,
	// loses nothing and makes the upgrade lose nothing either.
	stop, edits, editing := make(chan struct{}), make(chan int), make(chan struct{})
	go func() {
		n := 0
		defer func() { edits <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			cur := &configv1alpha2.PackageVariantSet{}
			if k8sClient.Get(ctx, client.ObjectKeyFromObject(set), cur) != nil {
				continue
			}
			patch := client.MergeFrom(cur.DeepCopy())
			if cur.Labels == nil {
				cur.Labels = map[string]string{}
			}
			cur.Labels["edit"] = fmt.Sprint(n + 1)
			if k8sClient.Patch(ctx, cur, patch) == nil {
				if n++; n == 1 {
					close(editing)
				}
			}
		}
	}()
	<-editing
	out = run("rpkg", "upgrade", "--variant-set", "platform", "--to", "2")
	close(stop)
	n := <-edits
	g.Expect(out).To(Equal("PackageVariantSet platform: app 1 -> 2, app-config 1 -> 2 (4 variants)\n"))
	g.Expect(upstreams()).To(Equal([]configv1alpha1.Upstream{{Repo: "catalog", Package: "app", Revision: "2"}, {Repo: "catalog", Package: "app-config", Revision: "2"}}))
	final := &configv1alpha2.PackageVariantSet{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(set), final)).To(Succeed())
	g.Expect(final.Labels).To(HaveKeyWithValue("edit", fmt.Sprint(n)), "the person's last edit is kept")
	second := drafts("v2")
	g.Expect(second).To(HaveLen(4))
	out = run("rpkg", "diff", "--variant-set", "platform", "--lifecycle", "Draft", "-o", "stat")
	g.Expect(out).To(ContainSubstring("cluster-01"))
	g.Expect(out).To(ContainSubstring("cluster-02"))
	// Again: nothing to do, said so.
	out = run("rpkg", "upgrade", "--variant-set", "platform", "--to", "v2", "--package", "app")
	g.Expect(out).To(Equal("PackageVariantSet platform: at v2 already (2 variants)\n"))
}
