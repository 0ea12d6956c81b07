package changes

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/internal/scheme"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{}, func(e *testenv.Env) error {
		env = e
		return nil
	}))
}

// What exists is not a change; a new object is; a watch the API server
// ends is resumed where it stood, so a change after that is told too; a
// burst of changes is told once per interval.
func TestWatch(t *testing.T) {
	g := NewWithT(t)
	watchTimeout = ptr.To[int64](1)
	var started atomic.Int32
	watching = func() { started.Add(1) }
	t.Cleanup(func() { watchTimeout, watching = nil, nil })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := env.Namespace(t, "changes")
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme.New()})
	g.Expect(err).NotTo(HaveOccurred())
	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	}
	g.Expect(c.Create(ctx, cm("before"))).To(Succeed())

	changed := Watch(ctx, c, ns, 500*time.Millisecond, &corev1.ConfigMapList{})
	g.Consistently(changed, 1500*time.Millisecond).ShouldNot(Receive(), "what exists is not a change")
	g.Expect(c.Create(ctx, cm("new"))).To(Succeed())
	g.Eventually(changed, 5*time.Second).Should(Receive())

	g.Eventually(started.Load, 10*time.Second, 50*time.Millisecond).Should(BeNumerically(">=", 2), "the server ended the watch (1s) and it was started again")
	g.Expect(c.Create(ctx, cm("after-resume"))).To(Succeed())
	g.Eventually(changed, 5*time.Second).Should(Receive(), "the watch was resumed")

	for i := range 20 {
		g.Expect(c.Create(ctx, cm(fmt.Sprintf("burst-%d", i)))).To(Succeed())
	}
	n := 0
	deadline := time.After(1200 * time.Millisecond)
	for done := false; !done; {
		select {
		case <-changed:
			n++
		case <-deadline:
			done = true
		}
	}
	g.Expect(n).To(And(BeNumerically(">=", 1), BeNumerically("<=", 3)), "a burst is told at most once per interval")

	cancel()
	g.Eventually(changed).Should(BeClosed())
}
