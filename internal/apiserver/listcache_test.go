package apiserver_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

// names lists revisions with opts, page by page when opts has a limit,
// and returns their namespace/names in the order listed and the continue
// tokens handed out.
func names(ctx context.Context, c client.Client, opts ...client.ListOption) ([]string, []string, error) {
	var out, tokens []string
	cont := ""
	for {
		list := &porchv1alpha1.PackageRevisionList{}
		if err := c.List(ctx, list, append(opts, client.Continue(cont))...); err != nil {
			return nil, nil, err
		}
		for _, pr := range list.Items {
			out = append(out, pr.Namespace+"/"+pr.Name)
		}
		if cont = list.Continue; cont == "" {
			return out, tokens, nil
		}
		tokens = append(tokens, cont)
	}
}

// Lists through porch.kpt.dev are served from the API server's copy of the
// storage: they answer every selector and page as the storage does, show
// what was written through the server before them, cut every page of a
// list from one state, and refuse a continue token whose state is gone.
func TestPackageRevisions_listFromCopy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := newFixture(t)
	other := newFixture(t)
	for i, lc := range []porchv1alpha1.Lifecycle{porchv1alpha1.LifecycleDraft, porchv1alpha1.LifecycleProposed, porchv1alpha1.LifecyclePublished, porchv1alpha1.LifecycleDraft} {
		pr := f.show(t, fmt.Sprintf("app%d", i), "ws1", lc)
		pr.Labels = map[string]string{"tier": fmt.Sprint(i % 2)}
		if lc == porchv1alpha1.LifecyclePublished {
			pr.Spec.Revision = 1
		}
		g.Expect(storageClient.Update(ctx, pr)).To(Succeed())
	}

	// Whatever is asked, the copy answers as the storage does.
	for _, opts := range [][]client.ListOption{
		{client.InNamespace(f.ns)},
		{client.InNamespace(f.ns), client.Limit(2)},
		{client.InNamespace(f.ns), client.MatchingLabels{"tier": "1"}},
		{client.InNamespace(f.ns), client.MatchingLabels{"tier": "1"}, client.Limit(1)},
		{client.InNamespace(f.ns), client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("spec.packageName", "app2")}},
		{client.InNamespace(f.ns), client.MatchingFieldsSelector{Selector: fields.OneTermNotEqualSelector("spec.lifecycle", "Draft")}},
		{client.InNamespace(f.ns), client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("spec.revision", "1")}},
		{client.InNamespace(f.ns), client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("spec.revision", "")}},
		{client.InNamespace(f.ns), client.MatchingFieldsSelector{Selector: fields.AndSelectors(
			fields.OneTermEqualSelector("spec.repository", "deploy"), fields.OneTermEqualSelector("metadata.name", f.name))}},
		{client.InNamespace(other.ns), client.Limit(1)},
		{client.Limit(3)},
		{},
	} {
		g.Eventually(func(g Gomega) {
			want, _, err := names(ctx, storageClient, opts...)
			g.Expect(err).NotTo(HaveOccurred())
			got, tokens, err := names(ctx, porch, opts...)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(want), "%#v", opts)
			for _, tok := range tokens {
				g.Expect(copyToken(tok)).To(BeTrue(), "the copy cut the pages")
			}
		}).Should(Succeed())
	}

	// Each revision listed is the one get shows (neither shows managed
	// fields: the storage keeps none, config/policy/mutating.yaml).
	list := &porchv1alpha1.PackageRevisionList{}
	g.Expect(porch.List(ctx, list, client.InNamespace(f.ns))).To(Succeed())
	g.Expect(list.Items).To(HaveLen(5))
	for _, pr := range list.Items {
		one := &porchv1alpha1.PackageRevision{}
		g.Expect(porch.Get(ctx, client.ObjectKeyFromObject(&pr), one)).To(Succeed())
		g.Expect(one.ManagedFields).To(BeEmpty())
		g.Expect(pr).To(Equal(*one), pr.Name)
	}
	g.Expect(list.Items[0].Spec.Tasks).To(Equal([]porchv1alpha1.Task{{Type: porchv1alpha1.TaskTypeInit}}), "shown as porch.kpt.dev shows it")

	// What is written through the server is listed by the next list.
	for i := range 20 {
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(porch.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: f.name}, pr)).To(Succeed())
		pr.Labels = map[string]string{"round": fmt.Sprint(i)}
		g.Expect(porch.Update(ctx, pr)).To(Succeed())
		got, _, err := names(ctx, porch, client.InNamespace(f.ns), client.MatchingLabels{"round": fmt.Sprint(i)})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal([]string{f.ns + "/" + f.name}), "round %d", i)
	}
	gone := &porchv1alpha1.PackageRevision{}
	g.Expect(porch.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "deploy.app3.ws1"}, gone)).To(Succeed())
	g.Expect(porch.Delete(ctx, gone)).To(Succeed())
	got, _, err := names(ctx, porch, client.InNamespace(f.ns))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).NotTo(ContainElement(f.ns+"/deploy.app3.ws1"), "deleted through the server, gone from the next list")

	// Every page of a list shows the state of its first page.
	first := &porchv1alpha1.PackageRevisionList{}
	g.Expect(porch.List(ctx, first, client.InNamespace(f.ns), client.Limit(2))).To(Succeed())
	before, _, err := names(ctx, porch, client.InNamespace(f.ns))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(before).To(HaveLen(4))
	g.Expect(first.Continue).NotTo(BeEmpty())
	g.Expect(*first.RemainingItemCount).To(Equal(int64(2)))
	f.show(t, "app9", "ws1", porchv1alpha1.LifecycleDraft)
	last := &porchv1alpha1.PackageRevision{}
	g.Expect(storageClient.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "deploy.app2.ws1"}, last)).To(Succeed())
	g.Expect(storageClient.Delete(ctx, last)).To(Succeed())
	g.Eventually(func() ([]string, error) {
		now, _, err := names(ctx, porch, client.InNamespace(f.ns))
		return now, err
	}).Should(And(ContainElement(f.ns+"/deploy.app9.ws1"), Not(ContainElement(f.ns+"/deploy.app2.ws1"))))
	rest := &porchv1alpha1.PackageRevisionList{}
	g.Expect(porch.List(ctx, rest, client.InNamespace(f.ns), client.Limit(10), client.Continue(first.Continue))).To(Succeed())
	g.Expect(rest.ResourceVersion).To(Equal(first.ResourceVersion))
	var paged []string
	for _, pr := range append(first.Items, rest.Items...) {
		paged = append(paged, pr.Namespace+"/"+pr.Name)
	}
	g.Expect(paged).To(Equal(before))

	// A token whose state is no longer held is refused as expired, as
	// the storage refuses one compacted away.
	b, _ := json.Marshal(map[string]any{"v": "scion.dev/list/v1", "rv": 1, "start": f.ns + "/a"})
	err = porch.List(ctx, &porchv1alpha1.PackageRevisionList{}, client.InNamespace(f.ns), client.Limit(2),
		client.Continue(base64.RawURLEncoding.EncodeToString(b)))
	g.Expect(apierrors.IsResourceExpired(err)).To(BeTrue(), "%v", err)

	// resourceVersion 0 is the copy as it is; an exact one is the
	// storage's.
	zero := &porchv1alpha1.PackageRevisionList{}
	g.Expect(porch.List(ctx, zero, client.InNamespace(f.ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}})).To(Succeed())
	g.Expect(zero.Items).To(HaveLen(4))
	exact := &porchv1alpha1.PackageRevisionList{}
	g.Expect(porch.List(ctx, exact, client.InNamespace(f.ns), &client.ListOptions{Raw: &metav1.ListOptions{
		ResourceVersion: zero.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact}})).To(Succeed())
	g.Expect(exact.Items).To(HaveLen(4))
}

// copyToken says whether a continue token is one the API server's copy
// handed out (the storage's say meta.k8s.io/v1).
func copyToken(tok string) bool {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return false
	}
	var v struct {
		V string `json:"v"`
	}
	return json.Unmarshal(b, &v) == nil && v.V == "scion.dev/list/v1"
}
