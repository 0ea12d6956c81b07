package e2e

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/cli"
	"github.com/scion-dev/scion/internal/rpkg"
)

// A batch verb interrupted (Ctrl-C cancels the command's context, as
// cmd/scion does) sends no more and says which revisions moved and which
// did not; what it says is what the server has. More revisions than the
// verb moves at once: the ones not started when it is interrupted never
// move.
func TestRpkgBatchInterrupted(t *testing.T) {
	g := NewWithT(t)
	ns, _, _ := setup(t)
	var names []string
	n := rpkg.BatchParallelism + 8
	for i := range n {
		ws := fmt.Sprintf("v%d", i)
		out, err := scion(ns, "rpkg", "init", fmt.Sprintf("app-%02d", i), "--repository", "catalog", "--workspace", ws)
		g.Expect(err).NotTo(HaveOccurred(), out)
		names = append(names, fmt.Sprintf("catalog.app-%02d.%s", i, ws))
	}
	// Cancel once the first revision moved.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			list := &porchv1alpha1.PackageRevisionList{}
			if err := k8sClient.List(ctx, list, client.InNamespace(ns)); err == nil {
				for _, pr := range list.Items {
					if pr.Spec.Lifecycle == porchv1alpha1.LifecycleProposed {
						cancel()
						return
					}
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	var out, errOut bytes.Buffer
	cmd := cli.NewRootCommand(cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(append([]string{"rpkg", "--kubeconfig", kubeconfig, "-n", ns, "propose"}, names...))
	err := cmd.ExecuteContext(ctx)
	t.Log(out.String())
	g.Expect(err).To(MatchError(MatchRegexp(fmt.Sprintf(`^interrupted: \d+ of %d revisions moved, \d+ not$`, n))), out.String())
	g.Expect(errOut.String()).NotTo(ContainSubstring("throttling"))
	shown := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^  moved: (\S+) \((.+)\)$`).FindAllStringSubmatch(out.String(), -1) {
		shown[m[1]] = "moved"
	}
	for _, m := range regexp.MustCompile(`(?m)^  not moved \(still Draft\): (\S+)$`).FindAllStringSubmatch(out.String(), -1) {
		shown[m[1]] = "not moved"
	}
	g.Expect(shown).To(HaveLen(n), "every revision is accounted for:\n%s", out.String())
	moved := 0
	for _, name := range names {
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pr)).To(Succeed())
		want := "not moved"
		if pr.Spec.Lifecycle == porchv1alpha1.LifecycleProposed {
			want, moved = "moved", moved+1
		}
		g.Expect(shown[name]).To(Equal(want), "%s is %s on the server:\n%s", name, pr.Spec.Lifecycle, out.String())
	}
	g.Expect(out.String()).To(HavePrefix(fmt.Sprintf("interrupted: %d of %d moved\n", moved, n)))
	g.Expect(moved).To(BeNumerically("<", n), "the revisions not started when interrupted are not moved:\n%s", out.String())
	// The moves recorded are carried out (git follows).
	g.Eventually(func() int {
		list := &porchv1alpha1.PackageRevisionList{}
		g.Expect(k8sClient.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
		inGit := 0
		for _, pr := range list.Items {
			if pr.GitLifecycle() == porchv1alpha1.LifecycleProposed {
				inGit++
			}
		}
		return inGit
	}).WithTimeout(time.Minute).Should(Equal(moved))
}
