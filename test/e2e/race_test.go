package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/rpkg"
)

// scion rpkg approve and scion rpkg reject of one Proposed revision at the
// same moment, many times: exactly one wins each time, the other says
// plainly that it lost and what the revision is now, and the revision
// ends as the winner left it, git and object agreeing, never Stalled.
func TestRpkg_approveRacesReject(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, _ := setup(t)
	const tries = 10
	wins := map[string]int{}
	for i := range tries {
		name := fmt.Sprintf("catalog.race-%d.v1", i)
		_, err := scion(ns, "rpkg", "init", fmt.Sprintf("race-%d", i), "--repository", "catalog", "--workspace", "v1")
		g.Expect(err).NotTo(HaveOccurred())
		_, err = scion(ns, "rpkg", "propose", name)
		g.Expect(err).NotTo(HaveOccurred())

		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := map[string]error{}
		var mu sync.Mutex
		for _, verb := range []string{"approve", "reject"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, err := scion(ns, "rpkg", verb, name)
				mu.Lock()
				errs[verb] = err
				mu.Unlock()
			}()
		}
		close(start)
		wg.Wait()

		pr := &porchv1alpha1.PackageRevision{}
		g.Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pr)).To(Succeed())
			r := rpkg.Ready(pr)
			g.Expect(r.Status).To(BeEquivalentTo("True"), "try %d: %s %s", i, r.Reason, r.Message)
			g.Expect(pr.Status.ObservedGeneration).To(Equal(pr.Generation))
			g.Expect(pr.GitLifecycle()).To(Equal(pr.Spec.Lifecycle), "try %d: git and the object agree", i)
		}, 60*time.Second, 200*time.Millisecond).Should(Succeed())
		approved, rejected := errs["approve"] == nil, errs["reject"] == nil
		g.Expect(approved != rejected).To(BeTrue(), "try %d: exactly one wins: approve: %v; reject: %v", i, errs["approve"], errs["reject"])
		switch {
		case approved:
			wins["approve"]++
			g.Expect(pr.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecyclePublished), "try %d", i)
			g.Expect(errs["reject"]).To(MatchError(MatchRegexp(`^`+name+`(: (git published it before this request was carried out: )?it is now Published \(approved by \S+\); nothing was changed: someone else moved it first| is Published; only Proposed and DeletionProposed revisions can be rejected)`)), "try %d", i)
		default:
			wins["reject"]++
			g.Expect(pr.Spec.Lifecycle).To(Or(Equal(porchv1alpha1.LifecycleDraft), Equal(porchv1alpha1.LifecycleProposed)), "try %d: rejected, or its approval withdrawn", i)
			g.Expect(errs["approve"]).To(MatchError(MatchRegexp(`^`+name+`(: (it is now (Draft|Proposed)( \(the approval was taken back before git carried it out\))?; nothing was changed: someone else moved it first|git published it before)| is Draft; it must be Proposed first)`)), "try %d", i)
		}
	}
	t.Logf("of %d tries: %v", tries, wins)
}
