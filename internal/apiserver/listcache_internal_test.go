package apiserver

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/scheme"
)

func cachedRevision(ns, name, rv string) *porchv1alpha1.PackageRevision {
	return &porchv1alpha1.PackageRevision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv,
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}}
}

func listNames(l *porchv1alpha1.PackageRevisionList) []string {
	var out []string
	for _, pr := range l.Items {
		out = append(out, pr.Namespace+"/"+pr.Name)
	}
	return out
}

// The copy cuts pages within a namespace, counts what remains, keeps the
// state of a list's first page for the pages that follow, and hands lists
// to the storage when it cannot answer them.
func TestListCache_pages(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newListCache()
	// Not filled yet: the storage answers at once (a list does not wait
	// for the first list of the storage, however long it may take).
	c.wait = time.Hour
	done := make(chan bool)
	go func() {
		_, ok, _ := c.list(ctx, "", &metainternalversion.ListOptions{})
		done <- ok
	}()
	select {
	case ok := <-done:
		g.Expect(ok).To(BeFalse())
	case <-time.After(time.Minute):
		t.Fatal("a list waited for the copy to be filled")
	}
	c.wait = listWait

	g.Expect(c.Replace([]any{cachedRevision("b", "y", "5"), cachedRevision("a", "x", "3"), cachedRevision("b", "x", "4"), cachedRevision("c", "z", "6")}, "10")).To(Succeed())
	all, ok, err := c.list(ctx, "", &metainternalversion.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	g.Expect(listNames(all)).To(Equal([]string{"a/x", "b/x", "b/y", "c/z"}))
	g.Expect(all.ResourceVersion).To(Equal("10"))
	g.Expect(all.Items[0].ManagedFields).To(BeNil())

	p1, _, err := c.list(ctx, "b", &metainternalversion.ListOptions{Limit: 1})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(listNames(p1)).To(Equal([]string{"b/x"}))
	g.Expect(*p1.RemainingItemCount).To(Equal(int64(1)))
	// The copy moves; the next page is of the first page's state.
	g.Expect(c.Delete(cachedRevision("b", "y", "11"))).To(Succeed())
	c.UpdateResourceVersion("11")
	p2, ok, err := c.list(ctx, "b", &metainternalversion.ListOptions{Limit: 1, Continue: p1.Continue})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	g.Expect(listNames(p2)).To(Equal([]string{"b/y"}))
	g.Expect(p2.Continue).To(BeEmpty(), "the namespace ends there")
	g.Expect(p2.ResourceVersion).To(Equal("10"))

	_, _, err = c.list(ctx, "a", &metainternalversion.ListOptions{Limit: 1, Continue: p1.Continue})
	g.Expect(apierrors.IsBadRequest(err)).To(BeTrue(), "a token of namespace b continues no list of a: %v", err)

	sel, _, err := c.list(ctx, "", &metainternalversion.ListOptions{Limit: 1, FieldSelector: fields.OneTermEqualSelector("metadata.name", "x")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(listNames(sel)).To(Equal([]string{"a/x"}))
	g.Expect(sel.RemainingItemCount).To(BeNil(), "not counted under a selector, as the storage does not")

	for _, opts := range []*metainternalversion.ListOptions{
		{ResourceVersion: "10", ResourceVersionMatch: metav1.ResourceVersionMatchExact},
		{ResourceVersion: "10", Limit: 1},
		{Continue: "a-token-of-the-storage"},
		{FieldSelector: fields.OneTermEqualSelector("status.lifecycle", "Draft")},
	} {
		_, ok, err := c.list(ctx, "", opts)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ok).To(BeFalse(), "%+v: the storage answers", opts)
	}

	// Snapshots are bounded: the oldest goes, and its tokens expire.
	first, _, _ := c.list(ctx, "", &metainternalversion.ListOptions{Limit: 1})
	for i := range maxSnapshots {
		g.Expect(c.Add(cachedRevision("d", fmt.Sprint(i), fmt.Sprint(20+i)))).To(Succeed())
		c.UpdateResourceVersion(fmt.Sprint(20 + i))
		_, _, err := c.list(ctx, "", &metainternalversion.ListOptions{Limit: 1})
		g.Expect(err).NotTo(HaveOccurred())
	}
	_, _, err = c.list(ctx, "", &metainternalversion.ListOptions{Limit: 1, Continue: first.Continue})
	g.Expect(apierrors.IsResourceExpired(err)).To(BeTrue(), "%v", err)
}

// A list waits for the copy to hold what the server showed or wrote, and
// for a resourceVersion it is asked to be no older than.
func TestListCache_waits(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newListCache()
	g.Expect(c.Replace([]any{cachedRevision("a", "x", "3")}, "10")).To(Succeed())
	c.saw(cachedRevision("a", "new", "12"))

	for _, opts := range []*metainternalversion.ListOptions{
		{},
		{ResourceVersion: "12", ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan},
	} {
		done := make(chan *porchv1alpha1.PackageRevisionList)
		go func() {
			l, _, _ := c.list(ctx, "a", opts)
			done <- l
		}()
		select {
		case <-done:
			t.Fatalf("%+v: listed before the copy held what was shown", opts)
		case <-time.After(100 * time.Millisecond):
		}
		g.Expect(c.Add(cachedRevision("a", "new", "12"))).To(Succeed())
		c.UpdateResourceVersion("12")
		g.Expect(listNames(<-done)).To(Equal([]string{"a/new", "a/x"}))
		// The watch starts again from an older list.
		g.Expect(c.Replace([]any{cachedRevision("a", "x", "3")}, "10")).To(Succeed())
	}

	// "0" is the copy as it is.
	now, ok, _ := c.list(ctx, "a", &metainternalversion.ListOptions{ResourceVersion: "0"})
	g.Expect(ok).To(BeTrue())
	g.Expect(listNames(now)).To(Equal([]string{"a/x"}))
}

// countingReader reads through a client and counts its lists.
type countingReader struct {
	client.Reader
	lists atomic.Int32
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.lists.Add(1)
	return c.Reader.List(ctx, list, opts...)
}

// A lookup of an upstream that fails (the cluster's API server does not
// answer: here, nothing listens) is not made again for every revision of
// a list: a list of thousands of revisions of one upstream is one lookup.
func TestUpstreamNames_failureKept(t *testing.T) {
	g := NewWithT(t)
	c, err := client.New(&rest.Config{Host: "http://127.0.0.1:1"}, client.Options{Scheme: scheme.NewStorage()})
	g.Expect(err).NotTo(HaveOccurred())
	r := &countingReader{Reader: c}
	u := &upstreamNames{reader: r}
	lock := &kptfilev1.UpstreamLock{Type: kptfilev1.GitOrigin, Git: &kptfilev1.GitLock{Repo: "https://git.example.com/catalog.git", Directory: "app", Ref: "app/v1"}}
	for range 100 {
		pr := &porchv1alpha1.PackageRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Status: porchv1alpha1.PackageRevisionStatus{Commit: "0123456789abcdef0123456789abcdef01234567", UpstreamLock: lock}}
		u.show(context.Background(), pr)
		g.Expect(pr.Spec.Tasks).To(BeEmpty(), "shown as stored")
	}
	g.Expect(r.lists.Load()).To(Equal(int32(1)))
}
