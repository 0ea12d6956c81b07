package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

// porch sends requests to porch.kpt.dev/v1alpha1 as porchctl does
// (Porch v1alpha1): JSON bodies in Porch's shapes, written from its
// published API, through the cluster's API server.
type porch struct {
	t  *testing.T
	rc *rest.RESTClient
	ns string
	// version is porch.kpt.dev's version the requests name: v1alpha1,
	// or v1alpha2 (porchctl --api-version=v1alpha2, which still reads
	// and writes packagerevisionresources in v1alpha1).
	version string
}

func newPorch(t *testing.T, ns string) *porch {
	return newPorchWith(t, ns, env.Config, "v1alpha1")
}

// newPorchWith sends requests with cfg (a user's: env.As) to a version
// of porch.kpt.dev.
func newPorchWith(t *testing.T, ns string, cfg *rest.Config, version string) *porch {
	cfg = rest.CopyConfig(cfg)
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(runtime.NewScheme()).WithoutConversion()
	rc, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &porch{t: t, rc: rc, ns: ns, version: version}
}

// do sends a request and decodes the answer; it returns the HTTP status.
func (p *porch) do(method, path string, body any) (int, map[string]any) {
	p.t.Helper()
	var data []byte
	if body != nil {
		var err error
		if s, ok := body.(string); ok {
			data = []byte(s)
		} else if data, err = json.Marshal(body); err != nil {
			p.t.Fatal(err)
		}
	}
	r := p.rc.Verb(method).AbsPath("/apis/porch.kpt.dev/"+p.version+"/namespaces/"+p.ns+"/"+path).SetHeader("Content-Type", "application/json")
	if data != nil {
		r = r.Body(data)
	}
	res := r.Do(context.Background())
	var code int
	res.StatusCode(&code)
	raw, _ := res.Raw()
	out := map[string]any{}
	_ = json.Unmarshal(raw, &out)
	return code, out
}

// get reads one PackageRevision.
func (p *porch) get(name string) map[string]any {
	p.t.Helper()
	code, pr := p.do(http.MethodGet, "packagerevisions/"+name, nil)
	if code != http.StatusOK {
		p.t.Fatalf("get %s: %d %v", name, code, pr)
	}
	return pr
}

// list lists PackageRevisions with a field selector, as porchctl rpkg get
// --revision/--workspace/--name and upgrade do; it returns their names.
func (p *porch) list(selector string) []string {
	p.t.Helper()
	raw, err := p.rc.Get().AbsPath("/apis/porch.kpt.dev/"+p.version+"/namespaces/"+p.ns+"/packagerevisions").Param("fieldSelector", selector).DoRaw(context.Background())
	if err != nil {
		p.t.Fatalf("list %s: %v: %s", selector, err, raw)
	}
	var l struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		p.t.Fatal(err)
	}
	var names []string
	for _, i := range l.Items {
		names = append(names, i.Metadata.Name)
	}
	return names
}

// lifecycle is a PackageRevision's spec.lifecycle and status.lifecycle.
func lifecycles(pr map[string]any) (string, string) {
	spec, _ := pr["spec"].(map[string]any)
	status, _ := pr["status"].(map[string]any)
	want, _ := spec["lifecycle"].(string)
	have, _ := status["lifecycle"].(string)
	return want, have
}

// waitLifecycle waits until git has the lifecycle.
func (p *porch) waitLifecycle(g Gomega, name, lc string) map[string]any {
	var pr map[string]any
	g.Eventually(func(g Gomega) {
		pr = p.get(name)
		_, have := lifecycles(pr)
		g.Expect(have).To(Equal(lc))
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	return pr
}

// update sets spec.lifecycle as porchctl propose, reject and
// propose-delete do (an update of the whole object), or through the
// approval subresource as approve does.
func (p *porch) move(g Gomega, name, to, subresource string) {
	pr := p.get(name)
	pr["spec"].(map[string]any)["lifecycle"] = to
	path := "packagerevisions/" + name
	if subresource != "" {
		path += "/" + subresource
	}
	code, out := p.do(http.MethodPut, path, pr)
	g.Expect(code).To(Equal(http.StatusOK), "%v", out)
}

// Every request porchctl makes, in Porch's shapes: init, clone (from a
// published revision), copy, upgrade, propose, approve (the approval
// subresource), reject, pull and push (PackageRevisionResources),
// propose-delete and delete.
func TestPorchctlRequests(t *testing.T) {
	g := NewWithT(t)
	ns, _, cluster := setup(t)
	p := newPorch(t, ns)
	created := func(body map[string]any) string {
		t.Helper()
		code, out := p.do(http.MethodPost, "packagerevisions", body)
		g.Expect(code).To(Equal(http.StatusCreated), "%v", out)
		return out["metadata"].(map[string]any)["name"].(string)
	}
	revision := func(repo, pkg, ws string, task map[string]any) map[string]any {
		return map[string]any{"apiVersion": "porch.kpt.dev/v1alpha1", "kind": "PackageRevision", "metadata": map[string]any{"namespace": ns},
			"spec": map[string]any{"packageName": pkg, "workspaceName": ws, "repository": repo, "tasks": []any{task}}}
	}
	publish := func(name string) {
		p.move(g, name, "Proposed", "")
		p.waitLifecycle(g, name, "Proposed")
		p.move(g, name, "Published", "approval")
		pr := p.waitLifecycle(g, name, "Published")
		g.Expect(pr["metadata"].(map[string]any)["annotations"]).To(HaveKey("porch.kpt.dev/approved-by"))
	}

	// porchctl rpkg init base --repository catalog --workspace v1
	base := created(revision("catalog", "base", "v1", map[string]any{"type": "init", "init": map[string]any{"description": "the base package"}}))
	g.Expect(base).To(Equal("catalog.base.v1"), "named as Porch names it")
	p.waitLifecycle(g, base, "Draft")
	publish(base)

	// porchctl rpkg get --revision 1 / --workspace v1 / --name base, and
	// the list porchctl rpkg upgrade --revision 1 makes.
	g.Expect(p.list("spec.revision=1")).To(ConsistOf(base))
	g.Expect(p.list("spec.workspaceName=v1")).To(ConsistOf(base))
	g.Expect(p.list("spec.packageName=base")).To(ConsistOf(base))
	g.Expect(p.list("spec.packageName=base,spec.repository=catalog,spec.revision=1")).To(ConsistOf(base))
	g.Expect(p.list("spec.lifecycle=Published")).To(ConsistOf(base))
	g.Expect(p.list("spec.revision=2")).To(BeEmpty())

	// porchctl rpkg clone catalog.base.v1 app --repository cluster-01 --workspace ws
	app := created(revision("cluster-01", "app", "ws", map[string]any{"type": "clone", "clone": map[string]any{"upstreamRef": map[string]any{"upstreamRef": map[string]any{"name": base}}}}))
	g.Expect(app).To(Equal("cluster-01.app.ws"))
	p.waitLifecycle(g, app, "Draft")
	// Read back with Porch's names, which porchctl upgrade reads.
	task := p.get(app)["spec"].(map[string]any)["tasks"].([]any)[0].(map[string]any)
	g.Expect(task["clone"]).To(HaveKeyWithValue("upstreamRef", HaveKeyWithValue("upstreamRef", HaveKeyWithValue("name", base))))

	// porchctl rpkg pull / push
	code, prr := p.do(http.MethodGet, "packagerevisionresources/"+app, nil)
	g.Expect(code).To(Equal(http.StatusOK), "%v", prr)
	resources := prr["spec"].(map[string]any)["resources"].(map[string]any)
	g.Expect(resources).To(HaveKey("Kptfile"))
	resources["notes.md"] = "# notes\n"
	resources[".KptRevisionMetadata"] = "apiVersion: porch.kpt.dev/v1alpha1\nkind: PackageRevision\n"
	code, pushed := p.do(http.MethodPut, "packagerevisionresources/"+app, prr)
	g.Expect(code).To(Equal(http.StatusOK), "%v", pushed)
	g.Expect(pushed["status"]).To(HaveKeyWithValue("renderStatus", HaveKeyWithValue("error", "")))
	g.Expect(gitserver.Git(t, cluster, "show", "drafts/app/ws:app/notes.md")).To(Equal("# notes"))

	// porchctl rpkg propose, then reject (the approval subresource, back
	// to Draft), propose again and approve.
	p.move(g, app, "Proposed", "")
	p.waitLifecycle(g, app, "Proposed")
	p.move(g, app, "Draft", "approval")
	p.waitLifecycle(g, app, "Draft")
	publish(app)

	// porchctl rpkg copy cluster-01.app.ws --workspace ws2
	cp := created(revision("cluster-01", "app", "ws2", map[string]any{"type": "edit", "edit": map[string]any{"sourceRef": map[string]any{"name": app}}}))
	g.Expect(cp).To(Equal("cluster-01.app.ws2"))
	p.waitLifecycle(g, cp, "Draft")

	// A new upstream revision, and porchctl rpkg upgrade of the
	// published app to it.
	base2 := created(revision("catalog", "base", "v2", map[string]any{"type": "edit", "edit": map[string]any{"sourceRef": map[string]any{"name": base}}}))
	p.waitLifecycle(g, base2, "Draft")
	publish(base2)
	up := created(revision("cluster-01", "app", "ws3", map[string]any{"type": "upgrade", "upgrade": map[string]any{
		"oldUpstreamRef": map[string]any{"name": base}, "newUpstreamRef": map[string]any{"name": base2},
		"localPackageRevisionRef": map[string]any{"name": app}, "strategy": "resource-merge"}}))
	pr := p.waitLifecycle(g, up, "Draft")
	upgrade := pr["spec"].(map[string]any)["tasks"].([]any)[0].(map[string]any)["upgrade"].(map[string]any)
	g.Expect(upgrade).To(HaveKeyWithValue("newUpstreamRef", HaveKeyWithValue("name", base2)))
	kf := gitserver.Git(t, cluster, "show", "drafts/app/ws3:app/Kptfile")
	g.Expect(kf).To(ContainSubstring("ref: base/v2"), "upgraded to the new upstream")

	// porchctl rpkg propose-delete of an upstream in use: refused,
	// naming the draft made from it; once that draft is deleted
	// (porchctl rpkg del), propose-delete, then del.
	cur := p.get(base2)
	cur["spec"].(map[string]any)["lifecycle"] = "DeletionProposed"
	code, out := p.do(http.MethodPut, "packagerevisions/"+base2, cur)
	g.Expect(code).To(Equal(http.StatusForbidden), "%v", out)
	g.Expect(fmt.Sprint(out)).To(ContainSubstring("PackageRevision " + base2 + " cannot be proposed for deletion: it is in use as an upstream by PackageRevision " + up))
	code, out = p.do(http.MethodDelete, "packagerevisions/"+up, nil)
	g.Expect(code).To(Equal(http.StatusOK), "%v", out)
	g.Eventually(func() int {
		code, _ := p.do(http.MethodGet, "packagerevisions/"+up, nil)
		return code
	}).WithTimeout(60 * time.Second).Should(Equal(http.StatusNotFound))
	p.move(g, base2, "DeletionProposed", "")
	p.waitLifecycle(g, base2, "DeletionProposed")
	code, out = p.do(http.MethodDelete, "packagerevisions/"+base2, nil)
	g.Expect(code).To(Equal(http.StatusOK), "%v", out)
	g.Eventually(func() int {
		code, _ := p.do(http.MethodGet, "packagerevisions/"+base2, nil)
		return code
	}).WithTimeout(60 * time.Second).Should(Equal(http.StatusNotFound))

}

// porchctl rpkg clone from a git URL: a plain repository served over
// HTTP with basic auth, its credentials in a Secret the request names.
// The draft holds the package at the ref asked for, its Kptfile records
// the repository, directory, ref and commit; a ref the repository does
// not have is reported on the revision, naming the field, and nothing is
// written.
func TestPorchctlCloneFromGit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, cluster := setup(t)
	p := newPorch(t, ns)
	b := gitserver.NewBlueprints(t, t.TempDir(), "blueprints.git")
	srv := gitserver.NewServer(t, filepath.Dir(b.Bare))
	srv.Username, srv.Password = "reader", "s3cret-token"
	g.Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "blueprints-git", Namespace: ns},
		StringData: map[string]string{"username": "reader", "password": "s3cret-token"}})).To(Succeed())
	clone := func(pkgName, ref, secret string) (int, map[string]any) {
		return p.do(http.MethodPost, "packagerevisions", map[string]any{"apiVersion": "porch.kpt.dev/v1alpha1", "kind": "PackageRevision", "metadata": map[string]any{"namespace": ns},
			"spec": map[string]any{"packageName": pkgName, "workspaceName": "ws", "repository": "cluster-01", "tasks": []any{map[string]any{"type": "clone", "clone": map[string]any{
				"upstreamRef": map[string]any{"type": "git", "git": map[string]any{"repo": srv.URLFor("blueprints.git"), "ref": ref, "directory": "/blueprints/app", "secretRef": map[string]any{"name": secret}}}}}}}})
	}

	// porchctl rpkg clone http://.../blueprints.git app --ref app-v1.0 --directory /blueprints/app --secret-ref blueprints-git --repository cluster-01 --workspace ws
	code, out := clone("app", "app-v1.0", "blueprints-git")
	g.Expect(code).To(Equal(http.StatusCreated), "%v", out)
	g.Expect(out["metadata"].(map[string]any)["name"]).To(Equal("cluster-01.app.ws"))
	p.waitLifecycle(g, "cluster-01.app.ws", "Draft")
	g.Expect(gitserver.Git(t, cluster, "show", "drafts/app/ws:app/cm.yaml")).To(ContainSubstring("color: blue"), "the package at the tag")
	kf := gitserver.Git(t, cluster, "show", "drafts/app/ws:app/Kptfile")
	g.Expect(kf).To(And(ContainSubstring("repo: "+srv.URLFor("blueprints.git")), ContainSubstring("directory: blueprints/app"),
		ContainSubstring("ref: app-v1.0"), ContainSubstring("commit: "+b.V1)))
	g.Expect(kf).NotTo(ContainSubstring("s3cret"))
	code, prr := p.do(http.MethodGet, "packagerevisionresources/cluster-01.app.ws", nil)
	g.Expect(code).To(Equal(http.StatusOK), "%v", prr)
	g.Expect(prr["spec"].(map[string]any)["resources"]).To(HaveKeyWithValue("cm.yaml", ContainSubstring("color: blue")))

	// Without the Secret the server refuses: the revision says so.
	code, out = clone("nocreds", "main", "")
	g.Expect(code).To(Equal(http.StatusCreated), "%v", out)
	// A ref the repository does not have.
	code, out = clone("missing", "v9", "blueprints-git")
	g.Expect(code).To(Equal(http.StatusCreated), "%v", out)
	for name, want := range map[string]string{
		"cluster-01.nocreds.ws": "spec.tasks[0].clone.upstreamRef.git.repo",
		"cluster-01.missing.ws": `spec.tasks[0].clone.upstreamRef.git.ref: ` + srv.URLFor("blueprints.git") + ` has no branch, tag or commit "v9"`,
	} {
		g.Eventually(func(g Gomega) {
			pr := p.get(name)
			status, _ := pr["status"].(map[string]any)
			g.Expect(fmt.Sprint(status["conditions"])).To(ContainSubstring(want))
		}).WithTimeout(60*time.Second).WithPolling(200*time.Millisecond).Should(Succeed(), name)
	}
	// A ref that is not there stalls the revision (its spec needs
	// fixing); refused credentials are tried again (the Secret may be
	// fixed meanwhile).
	stalled := func(name string) bool {
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(env.Storage.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pr)).To(Succeed())
		return slices.ContainsFunc(pr.Status.Conditions, func(c porchv1alpha1.Condition) bool { return c.Type == "Stalled" && c.Status == "True" })
	}
	g.Expect(stalled("cluster-01.missing.ws")).To(BeTrue())
	g.Expect(stalled("cluster-01.nocreds.ws")).To(BeFalse())
	g.Expect(gitserver.Git(t, cluster, "for-each-ref", "--format=%(refname)", "refs/heads/drafts")).To(Equal("refs/heads/drafts/app/ws"), "nothing else written")
	// Porch's rule: a clone makes a new package only.
	code, out = clone("app", "main", "blueprints-git")
	g.Expect(code).To(Equal(http.StatusUnprocessableEntity), "%v", out)
	g.Expect(fmt.Sprint(out["message"])).To(ContainSubstring("package app already exists in repository cluster-01"))

	// scion rpkg clone takes the same source.
	out2, err := scion(ns, "rpkg", "clone", srv.URLFor("blueprints.git"), "web", "--directory", "blueprints/app", "--secret-ref", "blueprints-git",
		"--repository", "cluster-01", "--workspace", "v1")
	g.Expect(err).NotTo(HaveOccurred(), out2)
	g.Expect(out2).To(Equal("cluster-01.web.v1 created\n"))
	g.Expect(gitserver.Git(t, cluster, "show", "drafts/web/v1:web/cm.yaml")).To(ContainSubstring("color: green"), "main, by default")
	_, err = scion(ns, "rpkg", "clone", "cluster-01.app.ws", "web", "--ref", "v1", "--repository", "cluster-01", "--workspace", "v2")
	g.Expect(err).To(MatchError(ContainSubstring("--ref, --directory and --secret-ref are for a SOURCE that is a git URL")))
}

// porchctl rpkg upgrade reads a revision's upstream from spec.tasks[0]:
// a PackageVariant's revision, which Scion writes without a task, shows
// the clone task of the upstream revision its Kptfile locks, and the
// upgrade porchctl then asks for works. The task shown is not stored
// when porchctl sends the object back.
func TestPorchctlUpgradeOfVariant(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, cluster := setup(t)
	p := newPorch(t, ns)
	created := func(repo, pkg, ws string, task map[string]any) string {
		t.Helper()
		code, out := p.do(http.MethodPost, "packagerevisions", map[string]any{"apiVersion": "porch.kpt.dev/v1alpha1", "kind": "PackageRevision", "metadata": map[string]any{"namespace": ns},
			"spec": map[string]any{"packageName": pkg, "workspaceName": ws, "repository": repo, "tasks": []any{task}}})
		g.Expect(code).To(Equal(http.StatusCreated), "%v", out)
		return out["metadata"].(map[string]any)["name"].(string)
	}
	publish := func(name string) {
		p.move(g, name, "Proposed", "")
		p.waitLifecycle(g, name, "Proposed")
		p.move(g, name, "Published", "approval")
		p.waitLifecycle(g, name, "Published")
	}
	base := created("catalog", "base", "v1", map[string]any{"type": "init", "init": map[string]any{"description": "the base package"}})
	p.waitLifecycle(g, base, "Draft")
	publish(base)

	pv := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: configv1alpha1.PackageVariantSpec{
		Upstream:   &configv1alpha1.Upstream{Repo: "catalog", Package: "base", Revision: "1"},
		Downstream: &configv1alpha1.Downstream{Repo: "cluster-01", Package: "app"},
	}}
	g.Expect(k8sClient.Create(ctx, pv)).To(Succeed())
	local := "cluster-01.app.packagevariant-1"
	var task map[string]any
	g.Eventually(func(g Gomega) {
		code, pr := p.do(http.MethodGet, "packagerevisions/"+local, nil)
		g.Expect(code).To(Equal(http.StatusOK))
		tasks, _ := pr["spec"].(map[string]any)["tasks"].([]any)
		g.Expect(tasks).To(HaveLen(1))
		task = tasks[0].(map[string]any)
	}).WithTimeout(60 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	g.Expect(task).To(HaveKeyWithValue("type", "clone"))
	g.Expect(task["clone"]).To(HaveKeyWithValue("upstreamRef", HaveKeyWithValue("upstreamRef", HaveKeyWithValue("name", base))), "the upstream porchctl reads")
	publish(local) // porchctl propose sends the object back whole
	stored := &porchv1alpha1.PackageRevision{}
	g.Expect(env.Storage.Get(ctx, client.ObjectKey{Namespace: ns, Name: local}, stored)).To(Succeed())
	g.Expect(stored.Spec.Tasks).To(BeEmpty(), "the task shown is not stored")

	// A new upstream revision; porchctl rpkg upgrade cluster-01.app.packagevariant-1 --workspace up:
	// the latest published revision of the upstream package, then the
	// upgrade task.
	base2 := created("catalog", "base", "v2", map[string]any{"type": "edit", "edit": map[string]any{"sourceRef": map[string]any{"name": base}}})
	p.waitLifecycle(g, base2, "Draft")
	publish(base2)
	g.Expect(p.list("spec.packageName=base,spec.repository=catalog")).To(ConsistOf(base, base2))
	up := created("cluster-01", "app", "up", map[string]any{"type": "upgrade", "upgrade": map[string]any{
		"oldUpstreamRef": map[string]any{"name": base}, "newUpstreamRef": map[string]any{"name": base2},
		"localPackageRevisionRef": map[string]any{"name": local}, "strategy": "resource-merge"}})
	p.waitLifecycle(g, up, "Draft")
	g.Expect(gitserver.Git(t, cluster, "show", "drafts/app/up:app/Kptfile")).To(ContainSubstring("ref: base/v2"))
}

// porchctl repo reg, sync and unreg, in the shapes porchctl writes: a
// Repository with secretRef.name "" and directory "/" is registered and
// Ready; repo sync's runOnceAt (a minute ahead, porchctl's minimum) makes
// Scion sync at once; repo unreg deletes it, and its PackageRevisions go
// with it (git stays).
func TestPorchctlRepositoryVerbs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "porchrepo")
	bare := gitserver.InitBare(t, t.TempDir(), "blueprints.git")
	repo := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "config.porch.kpt.dev/v1alpha1", "kind": "Repository",
		"metadata": map[string]any{"name": "blueprints", "namespace": ns},
		"spec": map[string]any{"type": "git", "description": `"Test Repository Description"`,
			"git": map[string]any{"repo": "file://" + bare, "branch": "main", "createBranch": true, "directory": "/", "secretRef": map[string]any{"name": ""}}},
	}}
	g.Expect(k8sClient.Create(ctx, repo)).To(Succeed())
	key := client.ObjectKey{Namespace: ns, Name: "blueprints"}
	r := &configv1alpha1.Repository{}
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, key, r)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(r.Status.Conditions, configv1alpha1.ReadyCondition)).To(BeTrue(), "%v", r.Status.Conditions)
	}).WithTimeout(60 * time.Second).Should(Succeed())

	// A package written to git by someone else; porchctl repo sync.
	st, err := store.Open(ctx, store.Options{URL: "file://" + bare, CacheDir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = (&pkgservice.Service{}).PublishDirect(ctx, st, "base", "v1", pkg.New(map[string][]byte{"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: base\n")}), "m", "someone")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(k8sClient.Get(ctx, key, r)).To(Succeed())
	if r.Spec.Sync == nil {
		r.Spec.Sync = &configv1alpha1.RepositorySync{}
	}
	r.Spec.Sync.RunOnceAt = &metav1.Time{Time: time.Now().Add(time.Minute)}
	g.Expect(k8sClient.Update(ctx, r)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "blueprints.base.v1"}, &porchv1alpha1.PackageRevision{})).To(Succeed())
	}).WithTimeout(20*time.Second).Should(Succeed(), "synced at once, not at the next period (30s) nor a minute later")

	// porchctl repo unreg.
	g.Expect(k8sClient.Delete(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "blueprints", Namespace: ns}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, key, r))).To(BeTrue())
		list := &porchv1alpha1.PackageRevisionList{}
		g.Expect(k8sClient.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		g.Expect(list.Items).To(BeEmpty())
	}).WithTimeout(60 * time.Second).Should(Succeed())
	g.Expect(gitserver.Git(t, bare, "tag")).To(Equal("base/v1"), "git stays")
}
