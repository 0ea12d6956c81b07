package pkgservice

import (
	"testing"

	. "github.com/onsi/gomega"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/store"
)

func TestHistoryBeyond(t *testing.T) {
	pub := func(p string, n int, latest bool) store.Revision {
		return store.Revision{Package: p, Revision: n, Lifecycle: porchv1alpha1.LifecyclePublished, Latest: latest}
	}
	revs := []store.Revision{
		pub("app", 1, false), pub("app", 2, false), pub("app", 3, false), pub("app", 4, false), pub("app", 5, true),
		{Package: "app", Workspace: "ws", Lifecycle: porchv1alpha1.LifecycleDraft},
		pub("db", 1, false), pub("db", 2, true),
	}
	keep := func(r store.Revision) bool { return r.Package == "app" && r.Revision == 2 }
	var got []string
	for _, r := range HistoryBeyond(revs, 2, keep) {
		got = append(got, r.Package+"/"+string(rune('0'+r.Revision)))
	}
	NewWithT(t).Expect(got).To(Equal([]string{"app/1", "app/3"}), "the newest 2 stay, the referenced v2 stays, drafts are not published history")
	NewWithT(t).Expect(HistoryBeyond(revs, 10, keep)).To(BeEmpty())
	// The latest is never deleted, whatever the limit says.
	odd := []store.Revision{pub("x", 9, true), pub("x", 10, false)}
	NewWithT(t).Expect(HistoryBeyond(odd, 1, func(store.Revision) bool { return false })).To(BeEmpty())
}
