package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"github.com/scion-dev/scion/config/rbac"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

// Every request porchctl --api-version=v1alpha2 makes, in Porch's
// v1alpha2 shapes (spec.source, status.revision, status.packageConditions,
// approval as an update of spec.lifecycle), over the same revisions
// v1alpha1 shows: init, get (its field selectors), clone, copy, upgrade,
// propose, reject, approve, propose-delete and del, by an editor and an
// approver with Scion's user roles.
func TestPorchctlV1alpha2(t *testing.T) {
	g := NewWithT(t)
	ns, catalog, cluster := setup(t)
	g.Expect(rbac.Install(context.Background(), env.Storage, rbac.UserRoles)).To(Succeed())
	v1 := newPorch(t, ns)
	editor := newPorchWith(t, ns, env.As(t, ns, "erin", "scion-editor"), "v1alpha2")
	approver := newPorchWith(t, ns, env.As(t, ns, "abe", "scion-approver"), "v1alpha2")

	revision := func(repo, pkg, ws string, source map[string]any) map[string]any {
		return map[string]any{"apiVersion": "porch.kpt.dev/v1alpha2", "kind": "PackageRevision",
			"metadata": map[string]any{"namespace": ns, "name": repo + "." + pkg + "." + ws},
			"spec":     map[string]any{"packageName": pkg, "workspaceName": ws, "repository": repo, "lifecycle": "Draft", "source": source}}
	}
	created := func(body map[string]any) map[string]any {
		t.Helper()
		code, out := editor.do(http.MethodPost, "packagerevisions", body)
		g.Expect(code).To(Equal(http.StatusCreated), "%v", out)
		return out
	}
	// move gets the revision and updates it with spec.lifecycle set, as
	// porchctl's v1alpha2 propose, approve, reject and propose-delete do.
	move := func(p *porch, name, to string) (int, map[string]any) {
		t.Helper()
		pr := p.get(name)
		pr["spec"].(map[string]any)["lifecycle"] = to
		return p.do(http.MethodPut, "packagerevisions/"+name, pr)
	}
	mustMove := func(p *porch, name, to string) {
		t.Helper()
		code, out := move(p, name, to)
		g.Expect(code).To(Equal(http.StatusOK), "%v", out)
		v1.waitLifecycle(g, name, to)
	}
	publish := func(name string) {
		t.Helper()
		mustMove(editor, name, "Proposed")
		mustMove(approver, name, "Published")
	}
	field := func(obj map[string]any, path ...string) any {
		var cur any = obj
		for _, k := range path {
			m, _ := cur.(map[string]any)
			cur = m[k]
		}
		return cur
	}

	// porchctl rpkg init base --repository catalog --workspace v1 --api-version=v1alpha2
	out := created(revision("catalog", "base", "v1", map[string]any{"init": map[string]any{"description": "the base package"}}))
	base := field(out, "metadata", "name").(string)
	g.Expect(out["apiVersion"]).To(Equal("porch.kpt.dev/v1alpha2"))
	g.Expect(field(out, "spec", "source", "init", "description")).To(Equal("the base package"))
	g.Expect(field(out, "status", "creationSource")).To(Equal("init"))
	g.Expect(field(out, "spec", "tasks")).To(BeNil(), "v1alpha2 has no tasks")
	v1.waitLifecycle(g, base, "Draft")
	g.Expect(field(v1.get(base), "spec", "tasks")).To(HaveLen(1), "v1alpha1 shows the source as its task")

	// An editor may propose and reject, not approve: approving is the
	// approval permission, in v1alpha2 as in v1alpha1.
	mustMove(editor, base, "Proposed")
	code, refused := move(editor, base, "Published")
	g.Expect(code).To(Equal(http.StatusForbidden), "%v", refused)
	g.Expect(fmt.Sprint(refused["message"])).To(ContainSubstring("erin may not approve PackageRevision " + base))
	mustMove(approver, base, "Draft") // porchctl rpkg reject
	g.Expect(field(approver.get(base), "metadata", "annotations")).NotTo(HaveKey("porch.kpt.dev/approved-by"))
	publish(base)
	pr2 := approver.get(base)
	g.Expect(field(pr2, "metadata", "annotations", "porch.kpt.dev/approved-by")).To(Equal("abe"))
	g.Eventually(func(g Gomega) {
		pr2 = approver.get(base)
		g.Expect(field(pr2, "status", "revision")).To(BeEquivalentTo(1))
		g.Expect(field(pr2, "status", "publishedBy")).To(Equal("abe"))
		g.Expect(field(pr2, "status", "publishedAt")).NotTo(BeNil())
	}).WithTimeout(60 * time.Second).Should(Succeed())

	// The same revision reads the same through both versions.
	pr1 := v1.get(base)
	for _, path := range [][]string{{"metadata", "name"}, {"metadata", "resourceVersion"}, {"metadata", "uid"}, {"metadata", "labels"}, {"metadata", "annotations"},
		{"spec", "packageName"}, {"spec", "repository"}, {"spec", "workspaceName"}, {"spec", "lifecycle"}} {
		g.Expect(field(pr2, path...)).To(Equal(field(pr1, path...)), "%v", path)
	}
	g.Expect(field(pr2, "status", "revision")).To(Equal(field(pr1, "spec", "revision")))

	// porchctl rpkg get --revision 1 / --workspace v1 / --name base
	g.Expect(editor.list("status.revision=1")).To(ConsistOf(base))
	g.Expect(editor.list("spec.workspaceName=v1")).To(ConsistOf(base))
	g.Expect(editor.list("spec.packageName=base")).To(ConsistOf(base))
	g.Expect(editor.list("spec.lifecycle=Published,spec.repository=catalog")).To(ConsistOf(base))
	raw, err := editor.rc.Get().AbsPath("/apis/porch.kpt.dev/v1alpha2/namespaces/"+ns+"/packagerevisions").Param("fieldSelector", "spec.revision=1").DoRaw(context.Background())
	g.Expect(err).To(HaveOccurred(), "v1alpha2 selects the revision as status.revision: %s", raw)
	g.Expect(string(raw)).To(ContainSubstring("field label not supported: spec.revision"))

	// porchctl rpkg clone catalog.base.v1 app --repository cluster-01 --workspace ws
	out = created(revision("cluster-01", "app", "ws", map[string]any{"cloneFrom": map[string]any{"upstreamRef": map[string]any{"name": base}}}))
	app := field(out, "metadata", "name").(string)
	g.Expect(app).To(Equal("cluster-01.app.ws"))
	v1.waitLifecycle(g, app, "Draft")
	g.Eventually(func(g Gomega) {
		pr := editor.get(app)
		g.Expect(field(pr, "status", "upstreamLock", "git", "ref")).To(Equal("base/v1"))
		g.Expect(field(pr, "status", "deployment")).To(Equal(true))
		g.Expect(field(pr, "status", "conditions")).To(ContainElement(HaveKeyWithValue("type", "Ready")))
	}).WithTimeout(60 * time.Second).Should(Succeed())

	// Bad input: a source cannot change, packageMetadata and a
	// subpackage are refused naming the field.
	pr := editor.get(app)
	pr["spec"].(map[string]any)["source"] = map[string]any{"init": map[string]any{}}
	code, refused = editor.do(http.MethodPut, "packagerevisions/"+app, pr)
	g.Expect(code).To(Equal(http.StatusUnprocessableEntity), "%v", refused)
	g.Expect(fmt.Sprint(refused["message"])).To(ContainSubstring("spec.source: Forbidden: the source of a revision cannot change"))
	bad := revision("cluster-01", "labelled", "ws", map[string]any{"init": map[string]any{}})
	bad["spec"].(map[string]any)["packageMetadata"] = map[string]any{"labels": map[string]any{"team": "a"}}
	code, refused = editor.do(http.MethodPost, "packagerevisions", bad)
	g.Expect(code).To(Equal(http.StatusUnprocessableEntity), "%v", refused)
	g.Expect(refused["message"]).To(Equal(`PackageRevision.porch.kpt.dev "cluster-01.labelled.ws" is invalid: spec.packageMetadata: Forbidden: Scion does not set labels and annotations on a package's resources; leave it empty (a function in the package's pipeline, set-labels or set-annotations, does it)`))
	code, refused = editor.do(http.MethodPost, "packagerevisions", revision("cluster-01", "sub", "ws", map[string]any{"init": map[string]any{"subpackage": "nested"}}))
	g.Expect(code).To(Equal(http.StatusUnprocessableEntity), "%v", refused)
	g.Expect(fmt.Sprint(refused["message"])).To(ContainSubstring("spec.source.init.subpackage: Forbidden: Scion makes the package itself"))
	code, refused = editor.do(http.MethodPost, "packagerevisions", revision("cluster-01", "two", "ws", map[string]any{"init": map[string]any{}, "copyFrom": map[string]any{"name": base}}))
	g.Expect(code).To(Equal(http.StatusUnprocessableEntity), "%v", refused)
	g.Expect(fmt.Sprint(refused["message"])).To(ContainSubstring("spec.source: Forbidden: exactly one of init, cloneFrom, copyFrom and upgrade must be set, not 2 [init copyFrom]"))
	// A merge patch (kubectl patch, kubectl apply) is refused the same
	// way, naming the field and not showing the whole object; the mark
	// the refusal travels in can never be stored through v1alpha1.
	raw, err = editor.rc.Patch(types.MergePatchType).AbsPath("/apis/porch.kpt.dev/v1alpha2/namespaces/" + ns + "/packagerevisions/" + app).
		Body([]byte(`{"spec":{"packageMetadata":{"annotations":{"a":"b"}}}}`)).DoRaw(context.Background())
	g.Expect(err).To(HaveOccurred())
	g.Expect(string(raw)).To(ContainSubstring(`spec.packageMetadata: Forbidden: Scion does not set labels`))
	g.Expect(string(raw)).NotTo(ContainSubstring(`\"apiVersion\"`), "the object is not shown")
	code, refused = v1.do(http.MethodPost, "packagerevisions", map[string]any{"apiVersion": "porch.kpt.dev/v1alpha1", "kind": "PackageRevision",
		"metadata": map[string]any{"name": "cluster-01.smuggled.ws", "annotations": map[string]any{"internal.scion.dev/v1alpha2-refused": "spec.x\x00no"}},
		"spec":     map[string]any{"packageName": "smuggled", "workspaceName": "ws", "repository": "cluster-01", "tasks": []any{map[string]any{"type": "init", "init": map[string]any{}}}}})
	g.Expect(code).To(Equal(http.StatusUnprocessableEntity), "%v", refused)

	// A readiness gate waits for a package condition: set through
	// v1alpha2's status (status.packageConditions), seen by v1alpha1
	// and in the Kptfile, and approval waits for it.
	pr = editor.get(app)
	pr["spec"].(map[string]any)["readinessGates"] = []any{map[string]any{"conditionType": "example.com/reviewed"}}
	code, out = editor.do(http.MethodPut, "packagerevisions/"+app, pr)
	g.Expect(code).To(Equal(http.StatusOK), "%v", out)
	mustMove(editor, app, "Proposed")
	code, refused = move(approver, app, "Published")
	g.Expect(code).To(Equal(http.StatusUnprocessableEntity), "%v", refused)
	g.Expect(fmt.Sprint(refused["message"])).To(ContainSubstring("readiness gates not met: example.com/reviewed (not set)"))
	g.Eventually(func(g Gomega) {
		pr := editor.get(app)
		status := pr["status"].(map[string]any)
		status["packageConditions"] = []any{map[string]any{"type": "example.com/reviewed", "status": "True", "reason": "Reviewed", "message": "looks good"}}
		code, out := editor.do(http.MethodPut, "packagerevisions/"+app+"/status", pr)
		g.Expect(code).To(Equal(http.StatusOK), "%v", out)
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Expect(field(v1.get(app), "status", "conditions")).To(ContainElement(And(HaveKeyWithValue("type", "example.com/reviewed"), HaveKeyWithValue("status", "True"))))
	g.Expect(field(v1.get(app), "status", "commit")).NotTo(BeEmpty(), "what v1alpha2 does not show is kept")
	mustMove(approver, app, "Published")
	g.Expect(gitserver.Git(t, cluster, "show", "app/v1:app/Kptfile")).To(ContainSubstring("example.com/reviewed"))

	// porchctl rpkg copy cluster-01.app.ws --workspace ws2
	out = created(revision("cluster-01", "app", "ws2", map[string]any{"copyFrom": map[string]any{"name": app}}))
	g.Expect(field(out, "status", "creationSource")).To(Equal("copy"))
	v1.waitLifecycle(g, "cluster-01.app.ws2", "Draft")

	// A new upstream revision, and porchctl rpkg upgrade of app to it.
	base2 := field(created(revision("catalog", "base", "v2", map[string]any{"copyFrom": map[string]any{"name": base}})), "metadata", "name").(string)
	v1.waitLifecycle(g, base2, "Draft")
	publish(base2)
	out = created(revision("cluster-01", "app", "ws3", map[string]any{"upgrade": map[string]any{
		"oldUpstream": map[string]any{"name": base}, "newUpstream": map[string]any{"name": base2},
		"currentPackage": map[string]any{"name": app}, "strategy": "resource-merge"}}))
	up := field(out, "metadata", "name").(string)
	v1.waitLifecycle(g, up, "Draft")
	g.Expect(field(editor.get(up), "spec", "source", "upgrade", "newUpstream", "name")).To(Equal(base2))
	g.Expect(gitserver.Git(t, cluster, "show", "drafts/app/ws3:app/Kptfile")).To(ContainSubstring("ref: base/v2"))

	// porchctl rpkg propose-delete of an upstream in use is refused
	// naming the user; once the upgrade draft is deleted (porchctl rpkg
	// del), propose-delete, then del by an approver.
	code, refused = move(editor, base2, "DeletionProposed")
	g.Expect(code).To(Equal(http.StatusForbidden), "%v", refused)
	g.Expect(fmt.Sprint(refused["message"])).To(ContainSubstring("it is in use as an upstream by PackageRevision " + up))
	code, out = editor.do(http.MethodDelete, "packagerevisions/"+up, nil)
	g.Expect(code).To(Equal(http.StatusOK), "%v", out)
	g.Eventually(func() int {
		code, _ := editor.do(http.MethodGet, "packagerevisions/"+up, nil)
		return code
	}).WithTimeout(60 * time.Second).Should(Equal(http.StatusNotFound))
	mustMove(editor, base2, "DeletionProposed")
	code, refused = editor.do(http.MethodDelete, "packagerevisions/"+base2, nil)
	g.Expect(code).To(Equal(http.StatusForbidden), "%v", refused)
	code, out = approver.do(http.MethodDelete, "packagerevisions/"+base2, nil)
	g.Expect(code).To(Equal(http.StatusOK), "%v", out)
	g.Eventually(func() int {
		code, _ := v1.do(http.MethodGet, "packagerevisions/"+base2, nil)
		return code
	}).WithTimeout(60 * time.Second).Should(Equal(http.StatusNotFound))

	// The deleted revision's name is never given to other content: a
	// new revision in its workspace (the same object name) stalls,
	// naming what to do, and git has no draft of it; the next one
	// published is v3, not v2.
	created(revision("catalog", "base", "v2", map[string]any{"copyFrom": map[string]any{"name": base}}))
	g.Eventually(func(g Gomega) {
		conds, _ := field(editor.get(base2), "status", "conditions").([]any)
		g.Expect(conds).To(ContainElement(And(HaveKeyWithValue("type", "Stalled"), HaveKeyWithValue("status", "True"),
			HaveKeyWithValue("reason", "WorkspaceRetired"),
			HaveKeyWithValue("message", ContainSubstring(`workspace "v2" was published revision v2, which was deleted; a revision's name is never used again for other content: choose another workspace`)))))
	}).WithTimeout(60 * time.Second).Should(Succeed())
	g.Expect(gitserver.Git(t, catalog, "for-each-ref", "--format=%(refname)", "refs/heads/drafts/base/")).To(BeEmpty())
	g.Expect(gitserver.Git(t, catalog, "for-each-ref", "--format=%(refname)", "refs/scion/retired/")).To(Equal("refs/scion/retired/base/v2/v2"))
	base3 := field(created(revision("catalog", "base", "v3", map[string]any{"copyFrom": map[string]any{"name": base}})), "metadata", "name").(string)
	v1.waitLifecycle(g, base3, "Draft")
	publish(base3)
	g.Expect(field(editor.get(base3), "status", "revision")).To(BeEquivalentTo(3))
}
