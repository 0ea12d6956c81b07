package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/api/porch/v1alpha1/content"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

const kptfile = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"

// fixture is a namespace with a Repository over a bare git repository,
// and the draft app/ws1 in it, shown as a PackageRevision in the storage
// (as the Repository's sync shows it).
type fixture struct {
	ns    string
	bare  string
	st    *store.Repository
	draft store.Revision
	name  string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "api")
	bare := gitserver.InitBare(t, t.TempDir(), "deploy.git")
	g.Expect(env.Client.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "deploy", Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "file://" + bare, CreateBranch: true}}})).To(Succeed())
	st, err := store.Open(ctx, store.Options{URL: "file://" + bare, CreateBranch: true, CacheDir: filepath.Join(t.TempDir(), "c")})
	g.Expect(err).NotTo(HaveOccurred())
	files := pkg.New(map[string][]byte{"Kptfile": []byte(kptfile), "cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: \"1\"\n")})
	draft, err := st.WriteDraft(ctx, store.DraftWrite{Package: "app", Workspace: "ws1", Contents: files, Message: "Create app", Writer: store.WriterPerson})
	g.Expect(err).NotTo(HaveOccurred())
	f := &fixture{ns: ns, bare: bare, st: st, draft: draft, name: pkgservice.ObjectName("deploy", "app", "ws1")}
	pr := f.show(t, "app", "ws1", porchv1alpha1.LifecycleDraft)
	// The draft is in git: the sync's status says at which commit.
	pr.Status.Commit = draft.Commit
	g.Expect(storageClient.Status().Update(ctx, pr)).To(Succeed())
	return f
}

// show creates the storage's object of a revision, as the sync would.
func (f *fixture) show(t *testing.T, pkgPath, ws string, lc porchv1alpha1.Lifecycle) *porchv1alpha1.PackageRevision {
	t.Helper()
	pr := &porchv1alpha1.PackageRevision{ObjectMeta: metav1.ObjectMeta{Name: pkgservice.ObjectName("deploy", pkgPath, ws), Namespace: f.ns},
		Spec: porchv1alpha1.PackageRevisionSpec{Repository: "deploy", PackageName: pkgPath, WorkspaceName: ws, Lifecycle: lc}}
	if err := storageClient.Create(context.Background(), pr); err != nil {
		t.Fatal(err)
	}
	return pr
}

// A stored revision not in git (no commit: an administrator wrote it to
// the storage, nothing carried it out) shows no task it does not have:
// its Stalled condition says it has none, and kubectl must show the same.
func TestPackageRevisions_notInGitShowsNoTask(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t)
	f.show(t, "forged", "v9", porchv1alpha1.LifecyclePublished)
	shown := &porchv1alpha1.PackageRevision{}
	g.Eventually(func() error {
		return porch.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: pkgservice.ObjectName("deploy", "forged", "v9")}, shown)
	}).Should(Succeed())
	g.Expect(shown.Spec.Tasks).To(BeEmpty())
	// The draft in git shows Porch's init task, in the list as in a get
	// (once the API server's watch has brought its status).
	list := &porchv1alpha1.PackageRevisionList{}
	g.Eventually(func(g Gomega) {
		g.Expect(porch.List(ctx, list, client.InNamespace(f.ns))).To(Succeed())
		tasks := map[string][]porchv1alpha1.Task{}
		for _, pr := range list.Items {
			tasks[pr.Name] = pr.Spec.Tasks
		}
		g.Expect(tasks).To(Equal(map[string][]porchv1alpha1.Task{f.name: {{Type: porchv1alpha1.TaskTypeInit}}, shown.Name: nil}))
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// Porch's clients list, read and create PackageRevisions through
// porch.kpt.dev, and the storage holds them; one created without a name
// gets Porch's name.
func TestPackageRevisions_throughPorchAPI(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t)

	// (Written to the storage directly, as the sync does: lists show it
	// once the API server's watch brings it, its creation and then its
	// status, which says it is in git.) Stored without a task and without
	// an upstream, it shows the init task Porch's clients look for
	// (porchctl rpkg upgrade indexes spec.tasks[0]).
	list := &porchv1alpha1.PackageRevisionList{}
	g.Eventually(func(g Gomega) {
		g.Expect(porch.List(ctx, list, client.InNamespace(f.ns))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
		g.Expect(list.Items[0].Spec.Tasks).To(Equal([]porchv1alpha1.Task{{Type: porchv1alpha1.TaskTypeInit}}))
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(list.Items[0].Name).To(Equal("deploy.app.ws1"))
	g.Expect(list.Items[0].APIVersion).To(Or(BeEmpty(), Equal("porch.kpt.dev/v1alpha1")))

	// Field selectors the storage declares.
	g.Expect(porch.List(ctx, list, client.InNamespace(f.ns), client.MatchingFields{"spec.packageName": "other"})).To(Succeed())
	g.Expect(list.Items).To(BeEmpty())

	// porchctl rpkg init: no name; Porch's server names it.
	pr := &porchv1alpha1.PackageRevision{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns},
		Spec: porchv1alpha1.PackageRevisionSpec{Repository: "deploy", PackageName: "team/web", WorkspaceName: "v1", Lifecycle: porchv1alpha1.LifecycleDraft,
			Tasks: []porchv1alpha1.Task{{Type: porchv1alpha1.TaskTypeInit, Init: &porchv1alpha1.PackageInitTaskSpec{Description: "web"}}}}}
	g.Expect(porch.Create(ctx, pr)).To(Succeed())
	g.Expect(pr.Name).To(Equal("deploy.team.web.v1"))
	stored := &porchv1alpha1.PackageRevision{}
	g.Expect(storageClient.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "deploy.team.web.v1"}, stored)).To(Succeed())
	g.Expect(stored.Spec.Tasks).To(HaveLen(1))

	// Without the fields the name is made of: refused, naming them.
	err := porch.Create(ctx, &porchv1alpha1.PackageRevision{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns}, Spec: porchv1alpha1.PackageRevisionSpec{Repository: "deploy"}})
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(And(ContainSubstring("spec.packageName"), ContainSubstring("spec.workspaceName")))

	// Update and delete go through; errors speak of porch.kpt.dev.
	g.Expect(porch.Get(ctx, client.ObjectKeyFromObject(pr), pr)).To(Succeed())
	pr.Labels = map[string]string{"team": "web"}
	g.Expect(porch.Update(ctx, pr)).To(Succeed())
	g.Expect(storageClient.Get(ctx, client.ObjectKeyFromObject(stored), stored)).To(Succeed())
	g.Expect(stored.Labels).To(HaveKeyWithValue("team", "web"))
	stale := pr.DeepCopy()
	stale.ResourceVersion = stored.ResourceVersion
	stale.Labels["team"] = "ops"
	g.Expect(porch.Update(ctx, stale)).To(Succeed())
	pr.Labels["team"] = "late"
	err = porch.Update(ctx, pr)
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("packagerevisions.porch.kpt.dev"))
	g.Expect(err.Error()).NotTo(ContainSubstring("internal.scion.dev"))
	g.Expect(porch.Delete(ctx, stale)).To(Succeed())
	err = storageClient.Get(ctx, client.ObjectKeyFromObject(stored), stored)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
}

// Patches (which carry no resourceVersion) never fail because someone
// else wrote the object meanwhile, as with any Kubernetes resource: ten
// people labelling one revision at once all succeed.
func TestPackageRevisions_concurrentPatches(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t)
	errs := make(chan error, 10)
	for i := range 10 {
		go func() {
			pr := &porchv1alpha1.PackageRevision{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: f.name}}
			patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"metadata":{"labels":{"person-%d":"yes"}}}`, i)))
			errs <- porch.Patch(ctx, pr, patch)
		}()
	}
	for range 10 {
		g.Expect(<-errs).To(Succeed())
	}
	stored := &porchv1alpha1.PackageRevision{}
	g.Expect(storageClient.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: f.name}, stored)).To(Succeed())
	g.Expect(stored.Labels).To(HaveLen(10))
}

// An update made from an older read goes through when only the status
// moved since (the controllers write it; porchctl propose updates the
// whole object and does not retry), and is a conflict when the spec or
// the metadata moved.
func TestPackageRevisions_updateAfterStatus(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t)
	key := client.ObjectKey{Namespace: f.ns, Name: f.name}
	read := &porchv1alpha1.PackageRevision{}
	g.Expect(porch.Get(ctx, key, read)).To(Succeed())

	// The controller writes the status.
	stored := &porchv1alpha1.PackageRevision{}
	g.Expect(storageClient.Get(ctx, key, stored)).To(Succeed())
	stored.Status.Commit = f.draft.Commit
	g.Expect(storageClient.Status().Update(ctx, stored)).To(Succeed())

	propose := read.DeepCopy()
	propose.Spec.Lifecycle = porchv1alpha1.LifecycleProposed
	g.Expect(porch.Update(ctx, propose)).To(Succeed(), "only the status moved")
	g.Expect(storageClient.Get(ctx, key, stored)).To(Succeed())
	g.Expect(stored.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecycleProposed))
	g.Expect(stored.Status.Commit).To(Equal(f.draft.Commit), "the status is kept")

	// Someone labels it; an update from the older read would drop the label.
	stored.Labels = map[string]string{"reviewed": "yes"}
	g.Expect(storageClient.Update(ctx, stored)).To(Succeed())
	stale := propose.DeepCopy()
	stale.Spec.Lifecycle = porchv1alpha1.LifecycleDraft
	err := porch.Update(ctx, stale)
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "%v", err)
	g.Expect(storageClient.Get(ctx, key, stored)).To(Succeed())
	g.Expect(stored.Labels).To(HaveKeyWithValue("reviewed", "yes"))
}

// A watch through porch.kpt.dev sees what the storage's writers (the
// controllers) write, from the resourceVersion a list returned.
func TestPackageRevisions_watch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t)
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	list := &porchv1alpha1.PackageRevisionList{}
	g.Expect(wc.List(ctx, list, client.InNamespace(f.ns))).To(Succeed())
	w, err := wc.Watch(ctx, &porchv1alpha1.PackageRevisionList{}, client.InNamespace(f.ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	g.Expect(err).NotTo(HaveOccurred())
	defer w.Stop()
	f.show(t, "app", "ws2", porchv1alpha1.LifecycleDraft)
	select {
	case e := <-w.ResultChan():
		g.Expect(e.Type).To(Equal(watch.Added))
		pr, ok := e.Object.(*porchv1alpha1.PackageRevision)
		g.Expect(ok).To(BeTrue(), "%T", e.Object)
		g.Expect(pr.Name).To(Equal("deploy.app.ws2"))
	case <-time.After(30 * time.Second):
		t.Fatal("no event")
	}
}

// A push whose Kptfile's pipeline names an image that is not a builtin
// is rendered without running it (the server runs, as containers, only the
// images --function-images allows: none here, as by default): the files
// are written as given and the render status names the image and the
// flag, as for any pipeline that fails.
func TestPackageRevisionResources_pushImageNotAllowed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t)
	prr := &content.PackageRevisionResources{}
	g.Expect(porch.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: f.name}, prr)).To(Succeed())
	prr.Spec.Resources["Kptfile"] = kptfile + "pipeline:\n  mutators:\n  - image: evil.example.com/rm-rf:latest\n"
	g.Expect(porch.Update(ctx, prr)).To(Succeed())
	g.Expect(prr.Status.RenderStatus.Err).To(ContainSubstring("image evil.example.com/rm-rf:latest is not a builtin and is not allowed to run as a container here: an administrator lets images run with --function-images"))
	g.Expect(prr.Spec.Resources["Kptfile"]).To(ContainSubstring("evil.example.com/rm-rf:latest"), "written as given")
}

// porchctl rpkg pull reads a revision's files; push writes a draft's
// files as one commit, against the commit it read.
func TestPackageRevisionResources_pullPush(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t)

	prr := &content.PackageRevisionResources{}
	g.Expect(porch.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: f.name}, prr)).To(Succeed())
	g.Expect(prr.Spec.Resources).To(HaveKeyWithValue("Kptfile", kptfile))
	g.Expect(prr.Spec.Resources).To(HaveKey("cm.yaml"))
	g.Expect(prr.Spec.PackageName).To(Equal("app"))
	g.Expect(prr.Spec.RepositoryName).To(Equal("deploy"))
	g.Expect(prr.ResourceVersion).To(Equal(f.draft.Commit))

	// A push as porchctl makes it: the pulled files, the revision
	// metadata file it adds, the resourceVersion it read.
	prr.Spec.Resources["cm.yaml"] = strings.Replace(prr.Spec.Resources["cm.yaml"], `a: "1"`, `a: "2"`, 1)
	prr.Spec.Resources[".KptRevisionMetadata"] = "apiVersion: porch.kpt.dev/v1alpha1\nkind: PackageRevision\n"
	pulledAt := prr.ResourceVersion
	g.Expect(porch.Update(ctx, prr)).To(Succeed())
	g.Expect(prr.ResourceVersion).NotTo(Equal(pulledAt))
	g.Expect(prr.Status.RenderStatus.Err).To(BeEmpty())
	g.Expect(f.st.Fetch(ctx)).To(Succeed())
	now, err := f.st.Get(ctx, "app", "ws1", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(now.Commit).To(Equal(prr.ResourceVersion), "the commit returned is git's")
	g.Expect(now.Trailers[store.TrailerWriter]).To(Equal(store.WriterPerson))
	files, err := f.st.Read(ctx, now)
	g.Expect(err).NotTo(HaveOccurred())
	cm, _ := files.File("cm.yaml")
	g.Expect(string(cm)).To(ContainSubstring(`a: "2"`))
	_, kept := files.File(".KptRevisionMetadata")
	g.Expect(kept).To(BeFalse(), "porchctl's metadata file is not package content")
	// The person is the commit's author, and its message names them.
	author, subject, _ := strings.Cut(gitserver.Git(t, f.bare, "log", "-1", "--format=%an|%s", now.Commit), "|")
	g.Expect(author).NotTo(BeEmpty())
	g.Expect(subject).To(Equal("Update through the API by " + author))
	// A message of their own (scion rpkg push -m); a bad one refused,
	// naming the annotation, nothing written.
	prr.Annotations = map[string]string{content.CommitMessageAnnotation: "Raise a to 3"}
	prr.Spec.Resources["cm.yaml"] = strings.Replace(prr.Spec.Resources["cm.yaml"], `a: "2"`, `a: "3"`, 1)
	g.Expect(porch.Update(ctx, prr)).To(Succeed())
	g.Expect(f.st.Fetch(ctx)).To(Succeed())
	now, err = f.st.Get(ctx, "app", "ws1", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gitserver.Git(t, f.bare, "log", "-1", "--format=%an|%s", now.Commit)).To(Equal(author + "|Raise a to 3"))
	for _, bad := range []string{"two\nlines", "  ", strings.Repeat("x", content.MaxCommitMessage+1)} {
		prr.Annotations = map[string]string{content.CommitMessageAnnotation: bad}
		err = porch.Update(ctx, prr)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		g.Expect(err.Error()).To(ContainSubstring("metadata.annotations[config.porch.kpt.dev/commit-message]"))
		f.expectUnchanged(g, now.Commit)
	}
	prr.Annotations = nil

	// A push from the old pull: refused, nothing written.
	prr.ResourceVersion = pulledAt
	prr.Spec.Resources["cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lost\n"
	err = porch.Update(ctx, prr)
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("changed since it was read"))
	f.expectUnchanged(g, now.Commit)
}

// kubectl get packagerevisionresources lists the selected revisions'
// files; one whose Repository is gone is left out, the others listed.
func TestPackageRevisionResources_list(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t)
	f.show(t, "lost", "ws1", porchv1alpha1.LifecycleDraft) // not in git
	orphan := &porchv1alpha1.PackageRevision{ObjectMeta: metav1.ObjectMeta{Name: "gone.app.ws1", Namespace: f.ns},
		Spec: porchv1alpha1.PackageRevisionSpec{Repository: "gone", PackageName: "app", WorkspaceName: "ws1", Lifecycle: porchv1alpha1.LifecycleDraft}}
	g.Expect(storageClient.Create(ctx, orphan)).To(Succeed())
	list := &content.PackageRevisionResourcesList{}
	g.Expect(porch.List(ctx, list, client.InNamespace(f.ns))).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1))
	g.Expect(list.Items[0].Name).To(Equal(f.name))
	g.Expect(list.Items[0].Spec.Resources).To(HaveKey("Kptfile"))
}

// kubectl and Porch's clients resolve packagerevisions (and pr) to
// porch.kpt.dev, not to Scion's storage, which people may not read.
func TestDiscovery_porchFirst(t *testing.T) {
	g := NewWithT(t)
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	groups, err := restmapper.GetAPIGroupResources(dc)
	g.Expect(err).NotTo(HaveOccurred())
	mapper := restmapper.NewShortcutExpander(restmapper.NewDiscoveryRESTMapper(groups), dc, nil)
	for _, name := range []string{"packagerevisions", "packagerevision", "pr"} {
		gvr, err := mapper.ResourceFor(schema.GroupVersionResource{Resource: name})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(gvr.Group).To(Equal("porch.kpt.dev"), name)
	}
}

// What a push may not do is refused with the file named, and nothing is
// written to git.
func TestPackageRevisionResources_badInput(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t)
	read := func() *content.PackageRevisionResources {
		prr := &content.PackageRevisionResources{}
		g.Expect(porch.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: f.name}, prr)).To(Succeed())
		return prr
	}
	for _, c := range []struct {
		name, path, data, want string
		check                  func(error) bool
	}{
		{"invalid YAML", "broken.yaml", "apiVersion: v1\nkind: [ConfigMap\n", `spec.resources[broken.yaml]: Invalid value: "": not valid YAML`, apierrors.IsInvalid},
		{"a path out of the package", "../escape.yaml", "a: 1\n", `spec.resources[../escape.yaml]`, apierrors.IsInvalid},
		{"an absolute path", "/etc/passwd", "x\n", `spec.resources[/etc/passwd]`, apierrors.IsInvalid},
		// Paths no git can hold: refused before they are written, so they
		// never stop the repository's other packages.
		{"git's own folder", ".git/config", "x\n", `spec.resources[.git/config]: Invalid value: ".git/config": a path inside the package that git can hold: ".git" is git's own folder`, apierrors.IsInvalid},
		{"a git hook", ".git/hooks/post-checkout", "#!/bin/sh\n", `spec.resources[.git/hooks/post-checkout]`, apierrors.IsInvalid},
		{"git's folder in capitals", "sub/.GIT/config", "x\n", `".GIT" is git's own folder`, apierrors.IsInvalid},
		{"git's folder with a trailing dot", ".git./config", "x\n", `".git." is git's own folder`, apierrors.IsInvalid},
		{"a NUL", "a\x00b.yaml", "a: 1\n", `spec.resources["a\x00b.yaml"]: Invalid value: "a\x00b.yaml": a path inside the package that git can hold: control character U+0000`, apierrors.IsInvalid},
		{"a newline", "a\nb.yaml", "a: 1\n", `control character U+000A`, apierrors.IsInvalid},
		{"a right-to-left override", "evil\u202Elmay.sh", "x\n", `control character U+202E`, apierrors.IsInvalid},
		{"a name of spaces", "   ", "x\n", `a name of only spaces`, apierrors.IsInvalid},
		{"a file inside the Kptfile", "Kptfile/x", "x\n", `spec.resources: Invalid value: "": Kptfile is a file, and Kptfile/x puts a file inside it`, apierrors.IsInvalid},
		{"a file over the limit", "big.txt", strings.Repeat("x", int(testLimits.FileBytes)+1), "file big.txt of package app (65537) is over the max-file-size limit of 64Ki", apierrors.IsRequestEntityTooLargeError},
		// Larger than a generic API server reads (3 MiB): still named.
		{"a 5 MiB file", "huge.bin", strings.Repeat("y", 5<<20), "file huge.bin of package app (5Mi) is over the max-file-size limit of 64Ki", apierrors.IsRequestEntityTooLargeError},
	} {
		prr := read()
		prr.Spec.Resources[c.path] = c.data
		err := porch.Update(ctx, prr)
		g.Expect(c.check(err)).To(BeTrue(), "%s: %v", c.name, err)
		g.Expect(err.Error()).To(ContainSubstring(c.want), c.name)
		f.expectUnchanged(g, f.draft.Commit)
	}
	prr := read()
	delete(prr.Spec.Resources, "Kptfile")
	err := porch.Update(ctx, prr)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec.resources[Kptfile]: Required value"))
	f.expectUnchanged(g, f.draft.Commit)

	// A published revision's files cannot change.
	proposed, err := f.st.Propose(ctx, "app", "ws1", f.draft.Commit, store.Proposal{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = f.st.Publish(ctx, "app", "ws1", proposed.Commit, "alice", store.WriterPackageRevision)
	g.Expect(err).NotTo(HaveOccurred())
	prr = read()
	prr.Spec.Resources["cm.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: changed\n"
	err = porch.Update(ctx, prr)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("the revision is Published: only a Draft's files can be changed"))
}

// expectUnchanged checks the draft is still at commit.
func (f *fixture) expectUnchanged(g Gomega, commit string) {
	g.Expect(f.st.Fetch(context.Background())).To(Succeed())
	now, err := f.st.Get(context.Background(), "app", "ws1", 0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(now.Commit).To(Equal(commit), "nothing was written")
}

// Kubernetes RBAC is the only gate: a viewer reads content but cannot
// write it, someone without get sees nothing, an editor cannot approve,
// an approver approves and is recorded as the approver.
func TestRBAC(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t)
	key := client.ObjectKey{Namespace: f.ns, Name: f.name}

	viewer := as(t, f.ns, "vera", "scion-viewer")
	prr := &content.PackageRevisionResources{}
	g.Expect(viewer.Get(ctx, key, prr)).To(Succeed())
	prr.Spec.Resources["notes.txt"] = "hello\n"
	err := viewer.Update(ctx, prr)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
	f.expectUnchanged(g, f.draft.Commit)

	nobody := as(t, f.ns, "nora", "")
	err = nobody.Get(ctx, key, &content.PackageRevisionResources{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
	err = nobody.Get(ctx, key, &porchv1alpha1.PackageRevision{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)

	// An editor proposes; an editor cannot approve.
	editor := as(t, f.ns, "ed", "scion-editor")
	g.Expect(editor.Update(ctx, prr)).To(Succeed(), "an editor writes content")
	pr := &porchv1alpha1.PackageRevision{}
	g.Expect(editor.Get(ctx, key, pr)).To(Succeed())
	pr.Spec.Lifecycle = porchv1alpha1.LifecycleProposed
	pr.Annotations = map[string]string{porchv1alpha1.ProposedByAnnotation: "somebody-else", porchv1alpha1.ProposedAtAnnotation: "2001-01-01T00:00:00Z"}
	before := time.Now().Add(-time.Second)
	g.Expect(editor.Update(ctx, pr)).To(Succeed())
	// Who proposed and when: the authenticated user, now, not what was
	// sent; and a later change cannot rewrite it.
	proposal := func() (string, time.Time) {
		stored := &porchv1alpha1.PackageRevision{}
		g.Expect(storageClient.Get(ctx, key, stored)).To(Succeed())
		at, err := time.Parse(time.RFC3339, stored.Annotations[porchv1alpha1.ProposedAtAnnotation])
		g.Expect(err).NotTo(HaveOccurred())
		return stored.Annotations[porchv1alpha1.ProposedByAnnotation], at
	}
	by, at := proposal()
	g.Expect(by).To(Equal("ed"))
	g.Expect(at).To(BeTemporally(">=", before.Truncate(time.Second)))
	g.Expect(editor.Get(ctx, key, pr)).To(Succeed())
	pr.Annotations[porchv1alpha1.ProposedByAnnotation] = "mallory"
	delete(pr.Annotations, porchv1alpha1.ProposedAtAnnotation)
	pr.Annotations["note"] = "kept"
	g.Expect(editor.Update(ctx, pr)).To(Succeed())
	by2, at2 := proposal()
	g.Expect(by2).To(Equal("ed"))
	g.Expect(at2).To(Equal(at))
	pr.Spec.Lifecycle = porchv1alpha1.LifecyclePublished
	err = editor.SubResource("approval").Update(ctx, pr)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)

	// An approver approves through the subresource, as porchctl does.
	approver := as(t, f.ns, "alice", "scion-approver")
	g.Expect(approver.Get(ctx, key, pr)).To(Succeed())
	pr.Spec.Lifecycle = porchv1alpha1.LifecyclePublished
	pr.Annotations = map[string]string{porchv1alpha1.ApprovedByAnnotation: "somebody-else"}
	g.Expect(approver.SubResource("approval").Update(ctx, pr)).To(Succeed())
	stored := &porchv1alpha1.PackageRevision{}
	g.Expect(storageClient.Get(ctx, key, stored)).To(Succeed())
	g.Expect(stored.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecyclePublished))
	g.Expect(stored.Annotations).To(HaveKeyWithValue(porchv1alpha1.ApprovedByAnnotation, "alice"), "the authenticated user, not what was sent")

	// Only lifecycle moves an approver makes.
	g.Expect(approver.Get(ctx, key, pr)).To(Succeed())
	pr.Spec.Lifecycle = porchv1alpha1.LifecycleDraft
	err = approver.SubResource("approval").Update(ctx, pr)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec.lifecycle"))
}

// A clone from a git URL names a Secret only a user who may read it can
// name: the controller would send its credentials wherever the URL
// points. Porch's shapes are taken (a directory of "/", a secretRef
// without a name); a URL with credentials in it and a directory outside
// the repository are refused, naming the field.
func TestPackageRevisions_cloneFromGit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t)
	editor := as(t, f.ns, "ed", "scion-editor")
	clone := func(pkgName string, git porchv1alpha1.GitPackage) *porchv1alpha1.PackageRevision {
		return &porchv1alpha1.PackageRevision{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns},
			Spec: porchv1alpha1.PackageRevisionSpec{Repository: "deploy", PackageName: pkgName, WorkspaceName: "v1",
				Tasks: []porchv1alpha1.Task{{Type: porchv1alpha1.TaskTypeClone, Clone: &porchv1alpha1.PackageCloneTaskSpec{
					UpstreamRef: porchv1alpha1.UpstreamPackage{Type: "git", Git: &git}}}}}}
	}

	// porchctl rpkg clone https://.../blueprints.git web --repository deploy --workspace v1
	pr := clone("web", porchv1alpha1.GitPackage{Repo: "https://git.example.com/blueprints.git", Ref: "main", Directory: "/", SecretRef: &porchv1alpha1.SecretRef{}})
	g.Expect(editor.Create(ctx, pr)).To(Succeed())
	g.Expect(pr.Name).To(Equal("deploy.web.v1"))
	stored := &porchv1alpha1.PackageRevision{}
	g.Expect(storageClient.Get(ctx, client.ObjectKeyFromObject(pr), stored)).To(Succeed())
	git := stored.Spec.Tasks[0].Clone.UpstreamRef.Git
	g.Expect(git.Directory).To(BeEmpty(), "the root")
	g.Expect(git.SecretRef).To(BeNil(), "no Secret")

	// A Secret the editor may not read.
	pr = clone("db", porchv1alpha1.GitPackage{Repo: "https://attacker.example.com/x.git", SecretRef: &porchv1alpha1.SecretRef{Name: "team-git"}})
	err := editor.Create(ctx, pr)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(And(ContainSubstring("spec.tasks[0].clone.upstreamRef.git.secretRef"), ContainSubstring("ed may not get Secret "+f.ns+"/team-git")))
	g.Expect(apierrors.IsNotFound(storageClient.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "deploy.db.v1"}, stored))).To(BeTrue(), "nothing stored")
	// Nor by naming it later, on a revision created without it.
	pr = clone("cache", porchv1alpha1.GitPackage{Repo: "https://attacker.example.com/x.git"})
	g.Expect(editor.Create(ctx, pr)).To(Succeed())
	pr.Spec.Tasks[0].Clone.UpstreamRef.Git.SecretRef = &porchv1alpha1.SecretRef{Name: "team-git"}
	err = editor.Update(ctx, pr)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)

	// Allowed to read that one Secret, the editor may name it.
	g.Expect(env.Storage.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "team-git-reader", Namespace: f.ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"team-git"}, Verbs: []string{"get"}}}})).To(Succeed())
	g.Expect(env.Storage.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ed-team-git", Namespace: f.ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "team-git-reader"},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: "ed"}}})).To(Succeed())
	g.Eventually(func() error {
		return editor.Create(ctx, clone("db", porchv1alpha1.GitPackage{Repo: "https://git.example.com/blueprints.git", SecretRef: &porchv1alpha1.SecretRef{Name: "team-git"}}))
	}).WithTimeout(20*time.Second).Should(Succeed(), "RBAC caches catch up")

	// Porch's rule: init and clone make new packages only.
	err = editor.Create(ctx, clone("web", porchv1alpha1.GitPackage{Repo: "https://git.example.com/blueprints.git"}))
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("spec.tasks[0].type: Invalid value: \"clone\": package web already exists in repository deploy (deploy.web.v1)"))

	// Bad input, named.
	for _, c := range []struct {
		git  porchv1alpha1.GitPackage
		want string
	}{
		{porchv1alpha1.GitPackage{Repo: "https://bob:hunter2@git.example.com/x.git"}, "spec.tasks[0].clone.upstreamRef.git.repo"},
		{porchv1alpha1.GitPackage{Repo: "ftp://git.example.com/x.git"}, "spec.tasks[0].clone.upstreamRef.git.repo"},
		{porchv1alpha1.GitPackage{Repo: "https://git.example.com/x.git", Directory: "../../etc"}, "spec.tasks[0].clone.upstreamRef.git.directory"},
	} {
		err := editor.Create(ctx, clone("bad", c.git))
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
		g.Expect(err.Error()).To(ContainSubstring(c.want))
		g.Expect(err.Error()).NotTo(ContainSubstring("hunter2"))
	}
}

// kubectl get packagerevisions asks for the server's table, 500 rows a
// page: the rows are the storage's table, cell for cell what the server
// would compute from the objects (asked for with includeObject=Object),
// each row's object the revision's metadata as porch.kpt.dev shows it;
// paging, label selectors and RBAC apply as to any list.
func TestPackageRevisions_table(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t)
	for _, p := range []string{"app2", "app3"} {
		pr := f.show(t, p, "ws1", porchv1alpha1.LifecycleDraft)
		pr.Labels = map[string]string{"tier": p}
		g.Expect(storageClient.Update(ctx, pr)).To(Succeed())
	}
	one := &porchv1alpha1.PackageRevision{}
	g.Expect(storageClient.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: f.name}, one)).To(Succeed())
	one.Status.Conditions = []porchv1alpha1.Condition{{Type: "Ready", Status: "True", Reason: "Shown"}}
	one.Status.Lifecycle = porchv1alpha1.LifecycleDraft
	g.Expect(storageClient.Status().Update(ctx, one)).To(Succeed())

	one.Spec.Revision = 3
	g.Expect(storageClient.Update(ctx, one)).To(Succeed())

	get := func(cfg *rest.Config, gv schema.GroupVersion, include string, params map[string]string) (*metav1.Table, error) {
		cfg = rest.CopyConfig(cfg)
		cfg.GroupVersion = &gv
		cfg.APIPath = "/apis"
		cfg.NegotiatedSerializer = serializer.NewCodecFactory(env.Scheme).WithoutConversion()
		rc, err := rest.RESTClientFor(cfg)
		g.Expect(err).NotTo(HaveOccurred())
		req := rc.Get().Namespace(f.ns).Resource("packagerevisions").
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")
		if include != "" {
			req = req.Param("includeObject", include)
		}
		for k, v := range params {
			req = req.Param(k, v)
		}
		body, err := req.DoRaw(ctx)
		if err != nil {
			return nil, err
		}
		table := &metav1.Table{}
		return table, json.Unmarshal(body, table)
	}
	porchGV := porchv1alpha1.GroupVersion
	// As kubectl pages it, once the copy lists what was just written to
	// the storage directly (it shows milliseconds later); each row equal,
	// column for column and cell for cell, to the cluster's API server's
	// own table of the storage (its printer columns, valued from the
	// objects' JSON).
	var page *metav1.Table
	var rows []metav1.TableRow
	g.Eventually(func(g Gomega) {
		var err error
		page, err = get(env.Config, porchGV, "", map[string]string{"limit": "2"})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(page.Rows).To(HaveLen(2))
		g.Expect(page.Continue).NotTo(BeEmpty())
		rest2, err := get(env.Config, porchGV, "", map[string]string{"limit": "2", "continue": page.Continue})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rest2.Rows).To(HaveLen(1))
		g.Expect(rest2.Continue).To(BeEmpty())
		rows = append(slices.Clone(page.Rows), rest2.Rows...)
		stored, err := get(env.Config, porchv1alpha1.StorageGroupVersion, "", nil)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(page.ColumnDefinitions).To(Equal(stored.ColumnDefinitions))
		g.Expect(stored.Rows).To(HaveLen(3))
		for i := range rows {
			g.Expect(rows[i].Cells).To(Equal(stored.Rows[i].Cells), "row %d", i)
		}
	}).Should(Succeed())
	var columns []string
	for _, c := range page.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	g.Expect(columns).To(Equal([]string{"Name", "Package", "Workspace", "Revision", "Lifecycle", "Requested", "Repository", "Ready"}))
	whole, err := get(env.Config, porchGV, "Object", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(whole.Rows).To(HaveLen(3))
	g.Expect(rows[0].Cells).To(Equal([]any{"deploy.app.ws1", "app", "ws1", float64(3), "Draft", "Draft", "deploy", "True"}))
	g.Expect(rows[1].Cells).To(Equal([]any{"deploy.app2.ws1", "app2", "ws1", nil, nil, "Draft", "deploy", nil}))
	// Each row's object is the metadata porch.kpt.dev shows.
	for _, row := range rows {
		m := &metav1.PartialObjectMetadata{}
		g.Expect(json.Unmarshal(row.Object.Raw, m)).To(Succeed())
		g.Expect(m.APIVersion).To(Equal("meta.k8s.io/v1"))
		g.Expect(m.Kind).To(Equal("PartialObjectMetadata"))
		g.Expect(m.Namespace).To(Equal(f.ns))
		g.Expect(m.ManagedFields).To(BeEmpty(), "lists do not show managed fields")
	}
	full := &porchv1alpha1.PackageRevision{}
	g.Expect(json.Unmarshal(whole.Rows[0].Object.Raw, full)).To(Succeed())
	g.Expect(full.APIVersion).To(Equal("porch.kpt.dev/v1alpha1"))
	g.Expect(full.Spec.Tasks).To(Equal([]porchv1alpha1.Task{{Type: porchv1alpha1.TaskTypeInit}}), "the objects are porch.kpt.dev's")

	// Selectors.
	sel, err := get(env.Config, porchGV, "", map[string]string{"labelSelector": "tier=app3"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sel.Rows).To(HaveLen(1))
	g.Expect(sel.Rows[0].Cells[0]).To(Equal("deploy.app3.ws1"))
	// Someone who may not list revisions may not list their table.
	_, err = get(env.As(t, f.ns, "nobody", ""), porchGV, "", nil)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
}

// A server-side apply creates a revision that does not exist yet (kubectl
// apply --server-side, GitOps tools that apply), in v1alpha1 and in
// v1alpha2, and applies again to it (with force); a dry run creates
// nothing.
func TestPackageRevisions_serverSideApplyCreates(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t)
	for _, tc := range []struct{ version, name, source string }{
		{"v1alpha1", "deploy.applied.v1", `"tasks": [{"type": "init", "init": {"description": "applied"}}]`},
		{"v1alpha2", "deploy.applied2.v1", `"source": {"init": {"description": "applied"}}`},
	} {
		pkgName := strings.Split(tc.name, ".")[1]
		obj := &unstructured.Unstructured{}
		g.Expect(obj.UnmarshalJSON([]byte(`{"apiVersion": "porch.kpt.dev/` + tc.version + `", "kind": "PackageRevision",
			"metadata": {"name": "` + tc.name + `", "namespace": "` + f.ns + `", "labels": {"team": "a"}},
			"spec": {"repository": "deploy", "packageName": "` + pkgName + `", "workspaceName": "v1", "lifecycle": "Draft", ` + tc.source + `}}`))).To(Succeed())
		dry := obj.DeepCopy()
		g.Expect(porch.Patch(ctx, dry, client.Apply, client.FieldOwner("gitops"), client.DryRunAll)).To(Succeed(), tc.version)
		err := storageClient.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: tc.name}, &porchv1alpha1.PackageRevision{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a dry run creates nothing: %v", err)
		g.Expect(porch.Patch(ctx, obj.DeepCopy(), client.Apply, client.FieldOwner("gitops"))).To(Succeed(), tc.version)
		stored := &porchv1alpha1.PackageRevision{}
		g.Expect(storageClient.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: tc.name}, stored)).To(Succeed())
		g.Expect(stored.Spec.Tasks).To(Equal([]porchv1alpha1.Task{{Type: porchv1alpha1.TaskTypeInit, Init: &porchv1alpha1.PackageInitTaskSpec{Description: "applied"}}}), tc.version)
		g.Expect(stored.Labels).To(HaveKeyWithValue("team", "a"))
		// No field ownership is stored (see porch-compatibility.md): a
		// changed value is applied again with force, as Flux and Argo
		// CD apply.
		obj.SetLabels(map[string]string{"team": "b"})
		g.Expect(porch.Patch(ctx, obj.DeepCopy(), client.Apply, client.FieldOwner("gitops"), client.ForceOwnership)).To(Succeed(), tc.version)
		g.Expect(storageClient.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: tc.name}, stored)).To(Succeed())
		g.Expect(stored.Labels).To(HaveKeyWithValue("team", "b"))
	}
}
