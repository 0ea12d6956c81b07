package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/cli"
	"github.com/scion-dev/scion/internal/testutil/syncbuf"
)

// scion rollout status --watch follows a rollout as it goes: it prints the
// tree at once (the canary awaiting approval, its target not published),
// and again after each change without being asked (the approved canary's
// target published and healthy, who approved it), until interrupted.
func TestRolloutStatusWatch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns, _, _ := setup(t)
	run := func(args ...string) string {
		t.Helper()
		out, err := scion(ns, args...)
		g.Expect(err).NotTo(HaveOccurred(), "scion %v: %s", args, out)
		return out
	}
	run("rpkg", "init", "app", "--repository", "catalog", "--workspace", "v1")
	run("rpkg", "propose", "catalog.app.v1")
	run("rpkg", "clone", "catalog.app.v1", "app", "--repository", "cluster-01", "--workspace", "v1")
	g.Eventually(func() string { return run("rpkg", "get", "cluster-01.app.v1") }).WithTimeout(time.Minute).Should(ContainSubstring("Draft"))
	run("rpkg", "propose", "cluster-01.app.v1")
	pr := &porchv1alpha1.PackageRevision{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cluster-01.app.v1"}, pr)).To(Succeed())
	pr.Labels = map[string]string{"release": "r1"}
	g.Expect(k8sClient.Update(ctx, pr)).To(Succeed())
	g.Expect(k8sClient.Create(ctx, &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Name: "r1", Namespace: ns}, Spec: configv1alpha1.PackageRolloutSpec{
		RevisionSelector: metav1.LabelSelector{MatchLabels: map[string]string{"release": "r1"}},
		Waves:            []configv1alpha1.RolloutWave{{Name: "canary", MaxTargets: ptr.To[int32](1)}},
		Approval:         configv1alpha1.RolloutApprovalManual,
	}})).To(Succeed())

	out := &syncbuf.Buffer{}
	watchCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		cmd := cli.NewRootCommand(cli.Streams{In: strings.NewReader(""), Out: out, ErrOut: out})
		cmd.SetArgs([]string{"rollout", "status", "r1", "--watch", "--kubeconfig", kubeconfig, "-n", ns})
		done <- cmd.ExecuteContext(watchCtx)
	}()
	g.Eventually(out.String).WithTimeout(time.Minute).Should(MatchRegexp(`Wave/canary\s+AwaitingApproval`))
	g.Expect(out.String()).To(ContainSubstring("cluster-01.app.v1"))
	// The upstream it carries, by commit: cloned from a proposal, no version.
	g.Expect(out.String()).To(MatchRegexp(`repository cluster-01 \(app@[0-9a-f]{12}\), not published`))

	run("rollout", "approve", "r1", "canary", "--kubeconfig", kubeconfig, "-n", ns)
	g.Eventually(func() string {
		s := out.String()
		return s[max(0, strings.LastIndex(s, "\n--- ")):] // the latest tree printed
	}).WithTimeout(time.Minute).Should(And(MatchRegexp(`Wave/canary\s+Complete`), MatchRegexp(`repository cluster-01, revision 1 \(app@[0-9a-f]{12}\), published`),
		MatchRegexp(`approved by \S+ at 20\d\d-`)))

	stop()
	select {
	case err := <-done:
		g.Expect(err).NotTo(HaveOccurred(), "interrupted, it ends quietly")
	case <-time.After(30 * time.Second):
		t.Fatal("scion rollout status --watch did not end when interrupted")
	}
}
