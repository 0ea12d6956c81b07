package manager

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmanager "sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// TestEventRecorder_longNote: an event whose note is over the 1 KiB the
// API server accepts (a 4 KiB condition message) is recorded, shortened,
// saying how much was left out, instead of being refused and lost.
func TestEventRecorder_longNote(t *testing.T) {
	g := NewWithT(t)
	env := startEnv(t)
	mgr, err := crmanager.New(env.Config, crmanager.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	g.Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		g.Expect(<-done).To(Succeed())
	}()

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "long-note", Namespace: "default"}}
	g.Expect(env.Client.Create(ctx, cm)).To(Succeed())
	long := "the registry said: " + strings.Repeat("é", 2000) // 4 KiB, two bytes a rune
	eventRecorder(mgr, "scion-test").Eventf(cm, nil, corev1.EventTypeWarning, "Long", "Test", "%s", long)

	g.Eventually(func(g Gomega) {
		events := &eventsv1.EventList{}
		g.Expect(env.Client.List(ctx, events, client.InNamespace("default"))).To(Succeed())
		var notes []string
		for _, e := range events.Items {
			if e.Regarding.Name == cm.Name && e.Reason == "Long" {
				notes = append(notes, e.Note)
			}
		}
		g.Expect(notes).To(HaveLen(1))
		g.Expect(len(notes[0])).To(BeNumerically("<=", 1024))
		g.Expect(notes[0]).To(And(HavePrefix("the registry said: éé"), MatchRegexp(`é\.\.\. \(\d+ bytes more\)$`)))
	}, time.Minute, 100*time.Millisecond).Should(Succeed())
}
