package pkgservice

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
)

// Who wrote a draft's commits is read from the writer trailer, never from
// a subject: the variant's own commits and the conditions the
// PackageRevision controller mirrors are the variant's; a person's push
// (which carries the variant's trailers over), another variant whose name
// starts with this one's (app-eu for app) are not.
func TestForeignCommits_byWriterTrailer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	st := gitStore(t, "cluster.git")
	svc := &Service{}
	app := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", UID: "uid-app"},
		Spec: configv1alpha1.PackageVariantSpec{Downstream: &configv1alpha1.Downstream{Repo: "cluster", Package: "web"}}}
	appEU := app.DeepCopy()
	appEU.Name, appEU.UID = "app-eu", "uid-app-eu"
	version := 0
	contents := func() *pkg.Package {
		version++
		return pkg.New(map[string][]byte{"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\n"),
			"cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  v: \"" + strings.Repeat("x", version) + "\"\n")})
	}

	d, err := svc.WriteVariantDraft(ctx, st, app, VariantRevisions{}, contents())
	g.Expect(err).NotTo(HaveOccurred())
	d, err = svc.WriteVariantDraft(ctx, st, app, VariantRevisions{Draft: &d}, contents())
	g.Expect(err).NotTo(HaveOccurred())
	// The PackageRevision controller mirrors conditions into the Kptfile.
	p := contents()
	d, err = st.WriteDraft(ctx, store.DraftWrite{Package: d.Package, Workspace: d.Workspace, Expected: d.Commit, Contents: p,
		Message: ConditionsSubject + ": example.com/x=True", Writer: store.WriterPackageRevision})
	g.Expect(err).NotTo(HaveOccurred())
	ours, err := ForeignCommits(ctx, st, app, d.Package, d.Workspace)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ours).To(BeEmpty(), "the variant's and the controller's commits")

	// A person's push: the variant's trailers carry over, the writer does not.
	d, err = svc.PushDraft(ctx, st, d, d.Commit, contents(), "Update from PackageVariant app: my edit", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Trailers).To(HaveKeyWithValue(store.TrailerPackageVariantUID, "uid-app"), "the draft stays the variant's")
	// Another variant's commit, whose subject starts with this one's.
	d, err = st.WriteDraft(ctx, store.DraftWrite{Package: d.Package, Workspace: d.Workspace, Expected: d.Commit, Contents: contents(),
		Message: VariantUpdateSubject + appEU.Name, Writer: store.WriterPackageVariant,
		Trailers: store.Trailers{store.TrailerPackageVariant: "ns/app-eu", store.TrailerPackageVariantUID: string(appEU.UID)}})
	g.Expect(err).NotTo(HaveOccurred())

	foreign, err := ForeignCommits(ctx, st, app, d.Package, d.Workspace)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(foreign).To(HaveLen(2), "%v", foreign)
	g.Expect(foreign[1]).To(HaveSuffix("Update from PackageVariant app: my edit"))
	g.Expect(foreign[0]).To(HaveSuffix("Update from PackageVariant app-eu"))
}

// A variant's new draft never takes the workspace of a deleted published
// revision (its name, repository.package.workspace, is retired): it
// takes the next free one.
func TestWriteVariantDraft_skipsRetiredWorkspaces(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	st := gitStore(t, "cluster.git")
	svc := &Service{}
	pv := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", UID: "uid-app"},
		Spec: configv1alpha1.PackageVariantSpec{Downstream: &configv1alpha1.Downstream{Repo: "cluster", Package: "web"}}}
	contents := pkg.New(map[string][]byte{"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: web\n")})
	d, err := svc.WriteVariantDraft(ctx, st, pv, VariantRevisions{}, contents)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Workspace).To(Equal("packagevariant-1"))
	_, err = st.Propose(ctx, "web", d.Workspace, d.Commit, store.Proposal{})
	g.Expect(err).NotTo(HaveOccurred())
	pub, err := st.Publish(ctx, "web", d.Workspace, "", "", "")
	g.Expect(err).NotTo(HaveOccurred())
	dp, err := st.ProposeDeletion(ctx, "web", pub.Revision)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Delete(ctx, dp, "")).To(Succeed())

	d, err = svc.WriteVariantDraft(ctx, st, pv, VariantRevisions{}, contents)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Workspace).To(Equal("packagevariant-2"), "packagevariant-1 was v1, deleted")
}
