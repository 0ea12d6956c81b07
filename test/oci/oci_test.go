package oci_test

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/api/porch/v1alpha1/content"
	"github.com/scion-dev/scion/internal/kptfile"
	"github.com/scion-dev/scion/internal/oci"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

const (
	timeout  = 60 * time.Second
	interval = 200 * time.Millisecond
)

func appPackage(replicas string) *pkg.Package {
	return pkg.New(map[string][]byte{
		"Kptfile":  []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n"),
		"app.yaml": []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: " + replicas + "\n"),
	})
}

// registryStore opens a prefix of the test registry as its owner would
// (release tooling, a person with docker login).
func registryStore(t *testing.T, prefix string) *oci.Store {
	t.Helper()
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, reg.Password))
	st, err := oci.OpenStore(context.Background(), oci.StoreOptions{Prefix: prefix, Options: oci.Options{Transport: reg.Transport}})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// release publishes files as the next revision of package p, as a
// platform team's release tooling does.
func release(t *testing.T, st store.Store, p, ws string, files *pkg.Package) store.Revision {
	t.Helper()
	rev, err := (&pkgservice.Service{}).PublishDirect(context.Background(), st, p, ws, files, "release "+ws, "platform-team")
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// registrySecret creates a kubernetes.io/dockerconfigjson Secret for the
// test registry with password.
func registrySecret(t *testing.T, ns, name, password string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: reg.DockerConfigJSON(password)}}
	if err := storage.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

func ociRepository(ns, name, prefix, secret string, deployment bool) *configv1alpha1.Repository {
	r := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Type: configv1alpha1.OCIRepositoryType, Deployment: deployment, OCI: &configv1alpha1.OCIRepository{Registry: prefix}}}
	if secret != "" {
		r.Spec.OCI.SecretRef = &configv1alpha1.SecretRef{Name: secret}
	}
	return r
}

func gitRepository(ns, name, bare string, deployment bool) *configv1alpha1.Repository {
	return &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Deployment: deployment, Git: &configv1alpha1.GitRepository{Repo: "file://" + bare, CreateBranch: true}}}
}

// readyRepository waits for a Repository's Ready=True and returns it.
func readyRepository(g Gomega, ns, name string) *configv1alpha1.Repository {
	repo := &configv1alpha1.Repository{}
	g.Eventually(func(g Gomega) {
		c := repositoryReady(g, ns, name)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
		g.Expect(storage.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, repo)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	return repo
}

// repositoryReady reads a Repository's Ready condition, which must be
// there.
func repositoryReady(g Gomega, ns, name string) *metav1.Condition {
	repo := &configv1alpha1.Repository{}
	g.Expect(storage.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, repo)).To(Succeed())
	c := meta.FindStatusCondition(repo.Status.Conditions, configv1alpha1.ReadyCondition)
	g.Expect(c).NotTo(BeNil())
	return c
}

// variantRevision waits for the PackageVariant's downstream revision and
// returns it (through the Porch API).
func variantRevision(g Gomega, ns, name string) *porchv1alpha1.PackageRevision {
	pr := &porchv1alpha1.PackageRevision{}
	g.Eventually(func(g Gomega) {
		pv := &configv1alpha1.PackageVariant{}
		g.Expect(storage.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pv)).To(Succeed())
		c := meta.FindStatusCondition(pv.Status.Conditions, configv1alpha1.ReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
		g.Expect(pv.Status.DownstreamTargets).NotTo(BeEmpty())
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: pv.Status.DownstreamTargets[0].Name}, pr)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	return pr
}

func variant(ns, name string, up configv1alpha1.Upstream, downRepo, downPkg string) *configv1alpha1.PackageVariant {
	return &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: configv1alpha1.PackageVariantSpec{Upstream: &up, Downstream: &configv1alpha1.Downstream{Repo: downRepo, Package: downPkg},
			PackageContext: &configv1alpha1.PackageContext{Data: map[string]string{"tenant": name}}}}
}

// kptfileOf reads a revision's Kptfile through the Porch API
// (PackageRevisionResources).
func kptfileOf(g Gomega, ns, name string) *kptfilev1.KptFile {
	prr := &content.PackageRevisionResources{}
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, prr)).To(Succeed())
	kf, err := kptfile.Parse([]byte(prr.Spec.Resources["Kptfile"]))
	g.Expect(err).NotTo(HaveOccurred())
	return kf
}

// Blueprints served from an OCI registry, deployment packages written to
// one: Repositories of type oci (credentials from a dockerconfigjson
// Secret) list what the registry holds; PackageVariants clone from OCI
// into OCI, from git into OCI and from OCI into git, each downstream's
// Kptfile pinning its OCI upstream by digest; the lifecycle (propose,
// approve) lands as tags; a new upstream revision updates the variant;
// a floating tag in the registry is followed.
func TestOCIRepositories(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "oci")
	blueprints, deploy := reg.Host+"/"+ns+"/blueprints", reg.Host+"/"+ns+"/deploy"
	up := registryStore(t, blueprints)
	v1 := release(t, up, "app", "v1", appPackage("1"))
	g.Expect(v1.Commit).To(HavePrefix("sha256:"))
	gitCatalog := gitserver.InitBare(t, t.TempDir(), "catalog.git")
	gitCluster := gitserver.InitBare(t, t.TempDir(), "cluster.git")
	gitStore, err := store.Open(ctx, store.Options{URL: "file://" + gitCatalog, CreateBranch: true, CacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	release(t, gitStore, "app", "v1", appPackage("5"))

	registrySecret(t, ns, "regcred", reg.Password)
	for _, r := range []*configv1alpha1.Repository{
		ociRepository(ns, "blueprints", blueprints, "regcred", false),
		ociRepository(ns, "deploy", deploy, "regcred", true),
		gitRepository(ns, "catalog", gitCatalog, false),
		gitRepository(ns, "cluster", gitCluster, true),
	} {
		g.Expect(storage.Create(ctx, r)).To(Succeed())
	}
	repo := readyRepository(g, ns, "blueprints")
	g.Expect(repo.Status.PackageCount).To(Equal(1))
	g.Expect(repo.Status.Commit).To(HavePrefix("sha256:"))
	readyRepository(g, ns, "deploy")
	g.Eventually(func(g Gomega) {
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "blueprints.app.v1"}, pr)).To(Succeed())
		g.Expect(pr.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecyclePublished))
		g.Expect(pr.Spec.Revision).To(Equal(1))
	}, timeout, interval).Should(Succeed())

	// Three variants: OCI to OCI, git to OCI, OCI to git.
	for _, pv := range []*configv1alpha1.PackageVariant{
		variant(ns, "oci-to-oci", configv1alpha1.Upstream{Repo: "blueprints", Package: "app", Revision: "1"}, "deploy", "tenant-a"),
		variant(ns, "git-to-oci", configv1alpha1.Upstream{Repo: "catalog", Package: "app", Revision: "1"}, "deploy", "tenant-b"),
		variant(ns, "oci-to-git", configv1alpha1.Upstream{Repo: "blueprints", Package: "app", Revision: "1"}, "cluster", "tenant-c"),
	} {
		g.Expect(storage.Create(ctx, pv)).To(Succeed())
	}
	a := variantRevision(g, ns, "oci-to-oci")
	g.Expect(a.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecycleDraft))
	kf := kptfileOf(g, ns, a.Name)
	g.Expect(kf.UpstreamLock).NotTo(BeNil())
	g.Expect(kf.UpstreamLock.Type).To(Equal(kptfilev1.OCIOrigin))
	g.Expect(kf.UpstreamLock.OCI.Image).To(Equal(blueprints + "/app:v1"))
	g.Expect(kf.UpstreamLock.OCI.Digest).To(Equal(v1.Commit), "pinned by the digest of the revision cloned")
	g.Expect(kf.Upstream.OCI.Image).To(Equal(blueprints + "/app:v1"))
	g.Expect(a.Status.UpstreamLock.Commit()).To(Equal(v1.Commit))

	b := variantRevision(g, ns, "git-to-oci")
	kf = kptfileOf(g, ns, b.Name)
	g.Expect(kf.UpstreamLock.Type).To(Equal(kptfilev1.GitOrigin))
	prr := &content.PackageRevisionResources{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: b.Name}, prr)).To(Succeed())
	g.Expect(prr.Spec.Resources["app.yaml"]).To(ContainSubstring("replicas: 5"))

	c := variantRevision(g, ns, "oci-to-git")
	kf = kptfileOf(g, ns, c.Name)
	g.Expect(kf.UpstreamLock.OCI.Digest).To(Equal(v1.Commit))
	g.Expect(gitserver.Git(t, gitCluster, "for-each-ref", "--format=%(refname)", "refs/heads/drafts/")).To(ContainSubstring("drafts/tenant-c/"))

	// The drafts are tags in the registry: draft.<workspace>.
	down := registryStore(t, deploy)
	drafts, err := down.List(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(drafts).To(HaveLen(2))
	for _, d := range drafts {
		g.Expect(d.Lifecycle).To(Equal(porchv1alpha1.LifecycleDraft))
		g.Expect(down.RefName(d)).To(HavePrefix("draft."))
	}

	// Proposed and approved with the CLI, as a person does: published as
	// deploy/tenant-a:v1.
	out, err := scion(ns, "rpkg", "propose", a.Name)
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = scion(ns, "rpkg", "approve", a.Name)
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Eventually(func(g Gomega) {
		g.Expect(down.Fetch(ctx)).To(Succeed())
		rev, err := down.Get(ctx, "tenant-a", "", 1)
		g.Expect(err).NotTo(HaveOccurred())
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(a), pr)).To(Succeed())
		g.Expect(rev.PublishedBy).NotTo(BeEmpty())
		g.Expect(rev.PublishedBy).To(Equal(pr.Annotations[porchv1alpha1.ApprovedByAnnotation]), "who approved, in the registry")
		files, err := down.Read(ctx, rev)
		g.Expect(err).NotTo(HaveOccurred())
		data, _ := files.File("app.yaml")
		g.Expect(string(data)).To(ContainSubstring("replicas: 1"))
	}, timeout, interval).Should(Succeed())
	// What any OCI client pulls at deploy/tenant-a:v1 is that package.
	pulled, name, _, err := oci.Pull(ctx, mustRef(t, "oci://"+deploy+"/tenant-a:v1"), oci.Options{Transport: reg.Transport})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(name).To(Equal("tenant-a"))
	_, hasKptfile := pulled.File("Kptfile")
	g.Expect(hasKptfile).To(BeTrue())
	g.Eventually(func(g Gomega) {
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(a), pr)).To(Succeed())
		g.Expect(pr.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecyclePublished))
	}, timeout, interval).Should(Succeed())

	// Pulled straight from the registry with the person's credentials.
	dir := t.TempDir() + "/tenant-a"
	out, err = scion(ns, "rpkg", "pull", "--git", a.Name, dir)
	g.Expect(err).NotTo(HaveOccurred(), out)
	data, err := os.ReadFile(dir + "/app.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(ContainSubstring("replicas: 1"))

	// A new upstream revision: the variant moved to it gets a draft from
	// v2, pinned by v2's digest.
	v2 := release(t, up, "app", "v2", appPackage("2"))
	pv := &configv1alpha1.PackageVariant{}
	g.Expect(storage.Get(ctx, client.ObjectKey{Namespace: ns, Name: "oci-to-oci"}, pv)).To(Succeed())
	pv.Spec.Upstream.Revision = "2"
	g.Expect(storage.Update(ctx, pv)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := variantRevision(g, ns, "oci-to-oci")
		g.Expect(got.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecycleDraft))
		g.Expect(got.Status.UpstreamLock.Commit()).To(Equal(v2.Commit))
		prr := &content.PackageRevisionResources{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(got), prr)).To(Succeed())
		g.Expect(prr.Spec.Resources["app.yaml"]).To(ContainSubstring("replicas: 2"))
	}, timeout, interval).Should(Succeed())

	// A floating tag in the registry, moved by a person with the CLI (the
	// registry written directly, with the Docker config's credentials): a
	// variant following stable moves when the tag does.
	out, err = scion(ns, "rpkg", "tag", "app", "stable", "--repository", "blueprints", "--revision", "1")
	g.Expect(err).NotTo(HaveOccurred(), out)
	out, err = scion(ns, "rpkg", "tag", "app", "--repository", "blueprints")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(MatchRegexp(`stable\s+1`))
	g.Expect(storage.Create(ctx, variant(ns, "follows-stable", configv1alpha1.Upstream{Repo: "blueprints", Package: "app", Tag: "stable"}, "deploy", "tenant-d"))).To(Succeed())
	g.Expect(variantRevision(g, ns, "follows-stable").Status.UpstreamLock.Commit()).To(Equal(v1.Commit))
	_, err = up.SetFloatingTag(ctx, "app", "stable", 2)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		g.Expect(variantRevision(g, ns, "follows-stable").Status.UpstreamLock.Commit()).To(Equal(v2.Commit))
	}, timeout, interval).Should(Succeed())
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := oci.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// pushImage pushes a container image (not a package) at ref.
func pushImage(t *testing.T, ref string) {
	t.Helper()
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, remote.WithTransport(reg.Transport), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		t.Fatal(err)
	}
}

// What a careless or hostile user gives a Repository of type oci: refused
// at apply, or reported in its status naming what to fix; another tool's
// artifact under the prefix and a published tag moved behind Scion's
// back are said, not fatal.
func TestOCIRepositories_badInput(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "ocibad")
	for _, c := range []struct {
		name string
		spec configv1alpha1.RepositorySpec
		want string
	}{
		{"scheme", configv1alpha1.RepositorySpec{Type: "oci", OCI: &configv1alpha1.OCIRepository{Registry: "oci://" + reg.Host + "/x"}}, "spec.oci.registry"},
		{"upper", configv1alpha1.RepositorySpec{Type: "oci", OCI: &configv1alpha1.OCIRepository{Registry: reg.Host + "/Platform"}}, "lowercase path"},
		{"missing", configv1alpha1.RepositorySpec{Type: "oci"}, "spec.oci is required when spec.type is oci"},
		{"both", configv1alpha1.RepositorySpec{Type: "oci", OCI: &configv1alpha1.OCIRepository{Registry: reg.Host + "/x"}, Git: &configv1alpha1.GitRepository{Repo: "https://example.com/x.git"}}, "exclusive"},
		{"type", configv1alpha1.RepositorySpec{Type: "s3"}, "Unsupported value"},
	} {
		err := storage.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: ns}, Spec: c.spec})
		g.Expect(err).To(HaveOccurred(), c.name)
		g.Expect(err.Error()).To(ContainSubstring(c.want), c.name)
	}

	// A wrong password: AuthenticationFailed naming the Secret.
	registrySecret(t, ns, "wrong", "not-the-password")
	g.Expect(storage.Create(ctx, ociRepository(ns, "refused", reg.Host+"/"+ns+"/refused", "wrong", false))).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := repositoryReady(g, ns, "refused")
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(configv1alpha1.AuthenticationFailedReason))
		g.Expect(c.Message).To(ContainSubstring("secret " + ns + "/wrong"))
	}, timeout, interval).Should(Succeed())

	// A Secret without an entry for the registry: SecretError naming it.
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other-host", Namespace: ns}, Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths": {"registry.example.com": {"auth": "eDp5"}}}`)}}
	g.Expect(storage.Create(ctx, s)).To(Succeed())
	g.Expect(storage.Create(ctx, ociRepository(ns, "no-entry", reg.Host+"/"+ns+"/x", "other-host", false))).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := repositoryReady(g, ns, "no-entry")
		g.Expect(c.Reason).To(Equal(configv1alpha1.SecretErrorReason))
		g.Expect(c.Message).To(And(ContainSubstring("other-host"), ContainSubstring("no entry for "+reg.Host)))
	}, timeout, interval).Should(Succeed())

	// A container image under the prefix and a published tag moved behind
	// Scion's back: the Repository is Ready, and says both.
	prefix := reg.Host + "/" + ns + "/mixed"
	st := registryStore(t, prefix)
	release(t, st, "app", "v1", appPackage("1"))
	pushImage(t, prefix+"/nginx:latest")
	registrySecret(t, ns, "regcred", reg.Password)
	g.Expect(storage.Create(ctx, ociRepository(ns, "mixed", prefix, "regcred", false))).To(Succeed())
	repo := readyRepository(g, ns, "mixed")
	g.Expect(repo.Status.PackageCount).To(Equal(1))
	c := meta.FindStatusCondition(repo.Status.Conditions, configv1alpha1.ReadyCondition)
	g.Expect(c.Message).To(And(ContainSubstring(prefix+"/nginx:latest"), ContainSubstring("not a Scion package")))
	g.Eventually(func(g Gomega) {
		g.Expect(syncWarnings(g, ns, "mixed")).To(ContainElement(And(ContainSubstring(prefix+"/nginx:latest"), ContainSubstring("not a Scion package"))))
	}, timeout, interval).Should(Succeed(), "a SyncWarning event says it too")

	other, err := oci.Push(ctx, mustRef(t, "oci://"+prefix+"/app:v1"), "app", appPackage("666"), oci.Options{Transport: reg.Transport})
	g.Expect(err).NotTo(HaveOccurred())
	annotateSync(t, ns, "mixed")
	g.Eventually(func(g Gomega) {
		repo := readyRepository(g, ns, "mixed")
		c := meta.FindStatusCondition(repo.Status.Conditions, configv1alpha1.ReadyCondition)
		g.Expect(c.Message).To(And(ContainSubstring(prefix+"/app:v1"), ContainSubstring("behind Scion's back"), ContainSubstring(other)))
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(storage.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mixed.app.v1"}, pr)).To(Succeed())
		g.Expect(pr.Status.Commit).To(Equal(other), "shown as the registry has it")
		g.Expect(syncWarnings(g, ns, "mixed")).To(ContainElement(And(ContainSubstring(prefix+"/app:v1"), ContainSubstring("behind Scion's back"))))
	}, timeout, interval).Should(Succeed())
}

// syncWarnings are the messages of a Repository's SyncWarning events.
func syncWarnings(g Gomega, ns, name string) []string {
	events := &corev1.EventList{}
	g.Expect(storage.List(context.Background(), events, client.InNamespace(ns))).To(Succeed())
	var msgs []string
	for _, e := range events.Items {
		if e.InvolvedObject.Kind == "Repository" && e.InvolvedObject.Name == name && e.Reason == configv1alpha1.SyncWarningReason {
			g.Expect(e.Type).To(Equal(corev1.EventTypeWarning))
			msgs = append(msgs, e.Message)
		}
	}
	return msgs
}

// annotateSync asks a Repository to sync now.
func annotateSync(t *testing.T, ns, name string) {
	t.Helper()
	repo := &configv1alpha1.Repository{}
	if err := storage.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, repo); err != nil {
		t.Fatal(err)
	}
	if err := pkgservice.RequestSync(context.Background(), storage, repo); err != nil {
		t.Fatal(err)
	}
}

// A registry that accepts connections and never answers: the Repository
// waits (RemoteUnavailable) within the timeout instead of hanging a
// worker, and a variant reading from it waits too, naming it.
func TestOCIRepositories_hangingRegistry(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "ocihang")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		var held []net.Conn
		for {
			c, err := l.Accept()
			if err != nil {
				for _, c := range held {
					_ = c.Close()
				}
				return
			}
			held = append(held, c) // never answered
		}
	}()
	g.Expect(storage.Create(ctx, ociRepository(ns, "hangs", l.Addr().String()+"/blueprints", "", false))).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := repositoryReady(g, ns, "hangs")
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(configv1alpha1.RemoteUnavailableReason))
		g.Expect(c.Message).To(ContainSubstring("did not answer within"))
	}, timeout, interval).Should(Succeed())
	g.Expect(storage.Create(ctx, variant(ns, "waits", configv1alpha1.Upstream{Repo: "hangs", Package: "app", Revision: "1"}, "hangs", "x"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		pv := &configv1alpha1.PackageVariant{}
		g.Expect(storage.Get(ctx, client.ObjectKey{Namespace: ns, Name: "waits"}, pv)).To(Succeed())
		c := meta.FindStatusCondition(pv.Status.Conditions, configv1alpha1.ReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Message).To(ContainSubstring("hangs"))
	}, timeout, interval).Should(Succeed())
}

// packageWith is a package named name whose PackageDependencies requires
// the given packages (name -> version range).
func packageWith(name string, requires map[string]string) *pkg.Package {
	files := map[string][]byte{
		"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + name + "\n"),
		"cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"),
	}
	deps := "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: PackageDependencies\nmetadata:\n  name: dependencies\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nspec:\n  requires:"
	if len(requires) == 0 {
		deps += " []"
	}
	deps += "\n"
	for n, v := range requires {
		deps += "  - package: {name: " + n + ", version: \"" + v + "\"}\n"
	}
	files["dependencies.yaml"] = []byte(deps)
	return pkg.New(files)
}

// A dependency catalog in an OCI Repository of the cluster: a variant of
// lib (which needs base) into an OCI deployment repository with install
// turned on installs base from the registry, the installed variant
// naming the OCI Repository as its upstream; the deployment repository's
// lock lists both.
func TestOCIRepositories_dependencies(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "ocideps")
	catalog, deploy := reg.Host+"/"+ns+"/catalog", reg.Host+"/"+ns+"/deploy"
	up := registryStore(t, catalog)
	release(t, up, "base", "v1", packageWith("base", nil))
	release(t, up, "lib", "v1", packageWith("lib", map[string]string{"base": ">=1.0.0"}))
	registrySecret(t, ns, "regcred", reg.Password)
	g.Expect(storage.Create(ctx, ociRepository(ns, "catalog", catalog, "regcred", false))).To(Succeed())
	g.Expect(storage.Create(ctx, ociRepository(ns, "site", deploy, "regcred", true))).To(Succeed())
	readyRepository(g, ns, "catalog")
	pv := variant(ns, "lib", configv1alpha1.Upstream{Repo: "catalog", Package: "lib", Revision: "1"}, "site", "lib")
	pv.Spec.Dependencies = &configv1alpha1.Dependencies{Install: true}
	g.Expect(storage.Create(ctx, pv)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &configv1alpha1.PackageVariant{}
		g.Expect(storage.Get(ctx, client.ObjectKeyFromObject(pv), got)).To(Succeed())
		g.Expect(got.Status.Dependencies).To(HaveLen(1))
		d := got.Status.Dependencies[0]
		g.Expect(d.Package).To(Equal("base"))
		g.Expect(d.Installed).To(BeTrue())
		installed := &configv1alpha1.PackageVariant{}
		g.Expect(storage.Get(ctx, client.ObjectKey{Namespace: ns, Name: d.InstalledBy}, installed)).To(Succeed())
		g.Expect(installed.Spec.Upstream.Repo).To(Equal("catalog"))
		g.Expect(installed.Spec.Downstream.Repo).To(Equal("site"))
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		l := &configv1alpha1.PackageLock{}
		g.Expect(storage.Get(ctx, client.ObjectKey{Namespace: ns, Name: "site"}, l)).To(Succeed())
		var names []string
		for _, p := range l.Packages {
			names = append(names, p.Name)
		}
		g.Expect(names).To(ConsistOf("base", "lib"))
	}, timeout, interval).Should(Succeed())
}

// A PackageVariantSet fans a blueprint from the registry out over three
// OCI deployment repositories selected by label, and a PackageRollout
// publishes the proposed drafts in two waves: each site's registry prefix
// ends with tenant:v1.
func TestOCIRepositories_setAndRollout(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "ocifleet")
	prefix := reg.Host + "/" + ns
	up := registryStore(t, prefix+"/blueprints")
	release(t, up, "app", "v1", appPackage("3"))
	registrySecret(t, ns, "regcred", reg.Password)
	g.Expect(storage.Create(ctx, ociRepository(ns, "blueprints", prefix+"/blueprints", "regcred", false))).To(Succeed())
	sites := []string{"site-1", "site-2", "site-3"}
	for _, s := range sites {
		r := ociRepository(ns, s, prefix+"/"+s, "regcred", true)
		r.Labels = map[string]string{"env": "prod"}
		g.Expect(storage.Create(ctx, r)).To(Succeed())
	}
	g.Expect(storage.Create(ctx, &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Name: "fleet", Namespace: ns}, Spec: configv1alpha2.PackageVariantSetSpec{
		Upstream: &configv1alpha1.Upstream{Repo: "blueprints", Package: "app", Revision: "1"},
		Targets: []configv1alpha2.Target{{
			RepositorySelector: &configv1alpha2.RepositorySelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
			Template:           &configv1alpha2.PackageVariantTemplate{Downstream: &configv1alpha2.DownstreamTemplate{Package: ptr.To("tenant")}, Labels: map[string]string{"release": "r1"}},
		}},
	}})).To(Succeed())
	var drafts []string
	g.Eventually(func(g Gomega) {
		list := &porchv1alpha1.PackageRevisionList{}
		g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"release": "r1"})).To(Succeed())
		drafts = drafts[:0]
		for _, pr := range list.Items {
			g.Expect(pr.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecycleDraft))
			drafts = append(drafts, pr.Name)
		}
		g.Expect(drafts).To(HaveLen(3))
	}, timeout, interval).Should(Succeed())
	for _, d := range drafts {
		out, err := scion(ns, "rpkg", "propose", d)
		g.Expect(err).NotTo(HaveOccurred(), out)
	}
	g.Expect(storage.Create(ctx, &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Name: "r1", Namespace: ns}, Spec: configv1alpha1.PackageRolloutSpec{
		RevisionSelector: metav1.LabelSelector{MatchLabels: map[string]string{"release": "r1"}},
		Waves:            []configv1alpha1.RolloutWave{{Name: "canary", MaxTargets: ptr.To[int32](1)}, {Name: "rest"}},
	}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, s := range sites {
			st := registryStore(t, prefix+"/"+s)
			rev, err := st.Get(ctx, "tenant", "", 1)
			g.Expect(err).NotTo(HaveOccurred(), s)
			g.Expect(rev.Lifecycle).To(Equal(porchv1alpha1.LifecyclePublished))
		}
		ro := &configv1alpha1.PackageRollout{}
		g.Expect(storage.Get(ctx, client.ObjectKey{Namespace: ns, Name: "r1"}, ro)).To(Succeed())
		c := meta.FindStatusCondition(ro.Status.Conditions, configv1alpha1.ReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	}, 2*timeout, interval).Should(Succeed())
}

// scion rpkg on Repositories of type oci, as a person uses it: init and
// publish a blueprint in the registry, clone it into an OCI deployment
// repository, pull, edit and push through the Kubernetes API (a push
// against a draft someone else changed since the pull is refused and
// loses nothing), then propose and approve.
func TestOCIRepositories_rpkg(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "ocirpkg")
	prefix := reg.Host + "/" + ns
	registrySecret(t, ns, "regcred", reg.Password)
	g.Expect(storage.Create(ctx, ociRepository(ns, "catalog", prefix+"/catalog", "regcred", false))).To(Succeed())
	g.Expect(storage.Create(ctx, ociRepository(ns, "site", prefix+"/site", "regcred", true))).To(Succeed())
	readyRepository(g, ns, "catalog")
	readyRepository(g, ns, "site")
	run := func(args ...string) string {
		t.Helper()
		out, err := scion(ns, args...)
		g.Expect(err).NotTo(HaveOccurred(), "scion %v: %s", args, out)
		return out
	}
	g.Expect(run("rpkg", "init", "base", "--repository", "catalog", "--workspace", "v1", "--description", "the base package")).To(Equal("catalog.base.v1 created\n"))
	run("rpkg", "propose", "catalog.base.v1")
	g.Expect(run("rpkg", "approve", "catalog.base.v1")).To(Equal("catalog.base.v1 is Published\n"))
	up := registryStore(t, prefix+"/catalog")
	v1, err := up.Get(ctx, "base", "", 1)
	g.Expect(err).NotTo(HaveOccurred(), "published in the registry as catalog/base:v1")

	g.Expect(run("rpkg", "clone", "catalog.base.v1", "base", "--repository", "site", "--workspace", "ws")).To(Equal("site.base.ws created\n"))
	dir, other := t.TempDir()+"/base", t.TempDir()+"/other"
	g.Eventually(func() error { _, err := scion(ns, "rpkg", "pull", "site.base.ws", dir); return err }, timeout, interval).Should(Succeed())
	run("rpkg", "pull", "site.base.ws", other)
	g.Expect(os.WriteFile(other+"/notes.md", []byte("# notes\n"), 0o644)).To(Succeed())
	run("rpkg", "push", "site.base.ws", other)
	g.Expect(os.WriteFile(dir+"/cm.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\ndata:\n  owner: site\n"), 0o644)).To(Succeed())
	_, err = scion(ns, "rpkg", "push", "site.base.ws", dir)
	g.Expect(err).To(MatchError(ContainSubstring("site.base.ws changed since")), "their push came first")
	g.Expect(err).To(MatchError(ContainSubstring("nothing was pushed")))
	down := registryStore(t, prefix+"/site")
	draft, err := down.Get(ctx, "base", "ws", 0)
	g.Expect(err).NotTo(HaveOccurred())
	files, err := down.Read(ctx, draft)
	g.Expect(err).NotTo(HaveOccurred())
	_, theirs := files.File("notes.md")
	_, mine := files.File("cm.yaml")
	g.Expect(theirs).To(BeTrue(), "their push is in the registry")
	g.Expect(mine).To(BeFalse(), "the refused push wrote nothing")
	merged := t.TempDir() + "/merged"
	run("rpkg", "pull", "site.base.ws", merged)
	data, err := os.ReadFile(dir + "/cm.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(merged+"/cm.yaml", data, 0o644)).To(Succeed())
	run("rpkg", "push", "site.base.ws", merged)
	run("rpkg", "propose", "site.base.ws")
	run("rpkg", "approve", "site.base.ws")
	g.Eventually(func(g Gomega) {
		g.Expect(down.Fetch(ctx)).To(Succeed())
		rev, err := down.Get(ctx, "base", "", 1)
		g.Expect(err).NotTo(HaveOccurred())
		files, err := down.Read(ctx, rev)
		g.Expect(err).NotTo(HaveOccurred())
		for _, f := range []string{"notes.md", "cm.yaml", "Kptfile"} {
			_, ok := files.File(f)
			g.Expect(ok).To(BeTrue(), f)
		}
		kf, _ := files.File("Kptfile")
		g.Expect(string(kf)).To(ContainSubstring("digest: " + v1.Commit))
	}, timeout, interval).Should(Succeed())
}

// A draft the controllers wrote, then edited through the Porch API (Scion's
// API server, a process of its own with its own view of the registry):
// the sync the API server requests reads the draft again, although the
// controllers' store wrote it itself since it last read it (which lets a
// periodic sync skip it once). The Repository's sync period is an hour:
// only the requested sync can show the edit.
func TestOCIRepositories_requestedSyncReadsOwnWrites(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "ocisync")
	blueprints, deploy := reg.Host+"/"+ns+"/blueprints", reg.Host+"/"+ns+"/deploy"
	release(t, registryStore(t, blueprints), "app", "v1", appPackage("1"))
	registrySecret(t, ns, "regcred", reg.Password)
	site := ociRepository(ns, "deploy", deploy, "regcred", true)
	site.Spec.Sync = &configv1alpha1.RepositorySync{Period: &metav1.Duration{Duration: time.Hour}}
	for _, r := range []*configv1alpha1.Repository{ociRepository(ns, "blueprints", blueprints, "regcred", false), site} {
		g.Expect(storage.Create(ctx, r)).To(Succeed())
	}
	readyRepository(g, ns, "blueprints")
	readyRepository(g, ns, "deploy")
	g.Expect(storage.Create(ctx, variant(ns, "edited", configv1alpha1.Upstream{Repo: "blueprints", Package: "app", Revision: "1"}, "deploy", "tenant"))).To(Succeed())
	written := variantRevision(g, ns, "edited")
	g.Expect(written.Status.Commit).To(HavePrefix("sha256:"))

	prr := &content.PackageRevisionResources{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(written), prr)).To(Succeed())
	prr.Spec.Resources["notes.md"] = "# edited through the API\n"
	g.Expect(k8sClient.Update(ctx, prr)).To(Succeed())
	edited := prr.ResourceVersion
	g.Expect(edited).NotTo(Equal(written.Status.Commit))
	g.Eventually(func(g Gomega) {
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(written), pr)).To(Succeed())
		g.Expect(pr.Status.Commit).To(Equal(edited))
	}, timeout, interval).Should(Succeed(), "the requested sync reads the draft the controllers wrote")
}
