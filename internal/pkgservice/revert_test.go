package pkgservice

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/scion-dev/scion/internal/testutil/storetest"
)

// A revert is done once per workspace: run again, it finds its revision;
// a workspace that holds the revert of another revision (a rollout
// created again under an earlier one's name) is refused, naming both,
// and nothing is written.
func TestRevert_workspaceOfAnotherRevert(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	st := gitStore(t, "cluster.git")
	svc := &Service{}
	_, err := svc.PublishDirect(ctx, st, "app", "one", storetest.Package("app", 1), "m", "me")
	g.Expect(err).NotTo(HaveOccurred())
	bad, err := svc.PublishDirect(ctx, st, "app", "two", storetest.Package("app", 2), "m", "me")
	g.Expect(err).NotTo(HaveOccurred())

	back, now, err := svc.Revert(ctx, st, bad, "rollback-x", "rollout", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(now).To(BeTrue())
	g.Expect(back.Revision).To(Equal(3))
	again, now, err := svc.Revert(ctx, st, bad, "rollback-x", "rollout", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(now).To(BeFalse(), "done before")
	g.Expect(again.Revision).To(Equal(3))

	worse, err := svc.PublishDirect(ctx, st, "app", "four", storetest.Package("app", 4), "m", "me")
	g.Expect(err).NotTo(HaveOccurred())
	_, _, err = svc.Revert(ctx, st, worse, "rollback-x", "rollout", nil)
	g.Expect(err).To(MatchError(ContainSubstring("rolling back app v4: workspace rollback-x holds v3, which is not its revert")))
	revs, err := st.ListPackage(ctx, "app")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(revs).To(HaveLen(4), "nothing written")

	back, now, err = svc.Revert(ctx, st, worse, "rollback-y", "rollout", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(now).To(BeTrue())
	g.Expect(back.Revision).To(Equal(5))
	p, err := st.Read(ctx, back)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Equal(storetest.Package("app", 1))).To(BeTrue(), "the content of v3, the revision before v4, which is v1's")
}
