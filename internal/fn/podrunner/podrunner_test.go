package podrunner

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/scion-dev/scion/internal/fn"
	"github.com/scion-dev/scion/internal/testutil/fnprog"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

var (
	client    kubernetes.Interface
	fnprogBin string
)

// The runner against a real API server; this file's kubelet stands in for
// a node: it serves each Pod's wrapper on a loopback address of its own
// (the real wrapper handler, running the real test function), and
// reports the Pod Running and Ready with that address, or an image pull
// failure for images named "missing". test/cluster runs the runner on a
// real node.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "podrunner")
	if err != nil {
		panic(err)
	}
	if fnprogBin, err = fnprog.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := testenv.Main(m, testenv.Options{}, func(env *testenv.Env) error {
		// No client-side rate limit: this file's kubelet polls beside
		// the runner.
		cfg := rest.CopyConfig(env.Config)
		cfg.QPS = -1
		client, err = kubernetes.NewForConfig(cfg)
		return err
	})
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// kubelet plays the node for the Pods of one namespace until the test ends.
type kubelet struct {
	t       *testing.T
	ns      string
	mu      sync.Mutex
	next    int
	servers map[string]*http.Server
	created int
}

func startKubelet(t *testing.T, ns string) *kubelet {
	k := &kubelet{t: t, ns: ns, servers: map[string]*http.Server{}, next: 10 + int(time.Now().UnixNano()%200)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done // it logs through t: not after the test ended
		k.mu.Lock()
		defer k.mu.Unlock()
		for _, s := range k.servers {
			_ = s.Close()
		}
	})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			k.sync(ctx)
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return k
}

func (k *kubelet) sync(ctx context.Context) {
	pods, err := client.CoreV1().Pods(k.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		if ctx.Err() == nil {
			k.t.Logf("kubelet: %v", err)
		}
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	live := map[string]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		live[p.Name] = true
		if p.Status.PodIP != "" || p.Status.Phase == corev1.PodPending && len(p.Status.ContainerStatuses) > 0 {
			continue
		}
		if p.Spec.Containers[0].Image == "registry.example.com/fns/missing:v1" {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "function", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "not found"}}}}
			p.Status.Phase = corev1.PodPending
			_, _ = client.CoreV1().Pods(k.ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
			continue
		}
		ip := "127.0.0." + strconv.Itoa(k.next)
		k.next++
		l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(Port)))
		if err != nil {
			k.t.Errorf("kubelet: %v", err)
			continue
		}
		token := ""
		for _, e := range p.Spec.Containers[0].Env {
			if e.Name == TokenEnv {
				token = e.Value
			}
		}
		// The wrapper's command is the entrypoint after "--".
		srv := &http.Server{Handler: fn.WrapperHandler(&fn.Exec{Path: fnprogBin}, token), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(l) }()
		p.Status.PodIP, p.Status.Phase = ip, corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		if _, err := client.CoreV1().Pods(k.ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			// Changed since the list (a conflict): the next round
			// starts it again, as a kubelet retries.
			k.t.Logf("kubelet: %s: %v", p.Name, err)
			_ = srv.Close()
			continue
		}
		k.servers[p.Name] = srv
		k.created++
	}
	for name, s := range k.servers {
		if !live[name] {
			_ = s.Close()
			delete(k.servers, name)
		}
	}
}

func (k *kubelet) made() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.created
}

func namespace(t *testing.T) string {
	t.Helper()
	ns, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "fns-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

func newRunner(t *testing.T, ns string, o Options) *Runner {
	t.Helper()
	o.Namespace, o.WrapperImage = ns, "scion:test"
	if o.Identity == "" {
		o.Identity = "scion-controller-0"
	}
	o.Entrypoint = func(context.Context, string) ([]string, error) { return []string{"/usr/local/bin/function"}, nil }
	r, err := New(client, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Start(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return r
}

func pods(t *testing.T, ns string) []corev1.Pod {
	t.Helper()
	list, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

const image = "registry.example.com/fns/fnprog:v1"

// A Pod made for an image serves its runs one after another: one Pod,
// locked down, labelled with its runner and image.
func TestRunner_reusesWarmPods(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	k := startKubelet(t, ns)
	r := newRunner(t, ns, Options{})
	for range 3 {
		rl := fnprog.ResourceList("label")
		g.Expect(r.RunImage(context.Background(), image, time.Minute, rl)).To(Succeed())
		g.Expect(rl.Items[0].GetLabels()).To(HaveKeyWithValue("touched-by", "fnprog"))
	}
	g.Expect(k.made()).To(Equal(1))
	p := pods(t, ns)
	g.Expect(p).To(HaveLen(1))
	g.Expect(p[0].Labels).To(HaveKeyWithValue(RunnerLabel, "scion-controller-0"))
	g.Expect(p[0].Labels).To(HaveKeyWithValue(ImageLabel, ImageHash(image)))
	g.Expect(p[0].Annotations).To(HaveKeyWithValue(ImageAnnotation, image))
	g.Expect(*p[0].Spec.AutomountServiceAccountToken).To(BeFalse())
	g.Expect(*p[0].Spec.SecurityContext.RunAsNonRoot).To(BeTrue())
	g.Expect(p[0].Spec.Containers[0].Command).To(Equal([]string{"/scion-wrapper/scion-fn-wrapper", "fn", "wrapper", "serve", "--listen", ":9446", "--", "/usr/local/bin/function"}))
	g.Expect(p[0].Spec.InitContainers[0].Image).To(Equal("scion:test"))
}

// Concurrent runs of one image use at most MaxPerImage Pods; the rest
// wait for one.
func TestRunner_maxPerImage(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	k := startKubelet(t, ns)
	r := newRunner(t, ns, Options{MaxPerImage: 2})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() { errs <- r.RunImage(context.Background(), image, time.Minute, fnprog.ResourceList("label")) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(k.made()).To(BeNumerically("<=", 2))
}

// A function that fails by itself leaves its Pod in use; one that times
// out has its Pod deleted, and the next run gets a new one.
func TestRunner_faults(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	k := startKubelet(t, ns)
	r := newRunner(t, ns, Options{})
	ctx := context.Background()

	err := r.RunImage(ctx, image, time.Minute, fnprog.ResourceList("crash"))
	var se *fn.StderrError
	g.Expect(errors.As(err, &se)).To(BeTrue(), "%v", err)
	g.Expect(se.ExitCode).To(Equal(3))
	g.Expect(r.RunImage(ctx, image, time.Minute, fnprog.ResourceList("label"))).To(Succeed())
	g.Expect(k.made()).To(Equal(1), "a crash does not cost the Pod")

	first := pods(t, ns)[0].Name
	err = r.RunImage(ctx, image, 500*time.Millisecond, fnprog.ResourceList("hang"))
	g.Expect(err).To(MatchError(ContainSubstring("timed out after 500ms")))
	_, err = client.CoreV1().Pods(ns).Get(ctx, first, metav1.GetOptions{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the Pod of a run that timed out is deleted: %v", err)
	g.Expect(r.RunImage(ctx, image, time.Minute, fnprog.ResourceList("label"))).To(Succeed())
	g.Expect(k.made()).To(Equal(2))

	err = r.RunImage(ctx, "registry.example.com/fns/missing:v1", time.Minute, fnprog.ResourceList("label"))
	g.Expect(err).To(MatchError(ContainSubstring("ErrImagePull")))
	g.Expect(err).To(MatchError(ContainSubstring("registry.example.com/fns/missing:v1")))
	for _, p := range pods(t, ns) {
		g.Expect(p.Labels[ImageLabel]).NotTo(Equal(ImageHash("registry.example.com/fns/missing:v1")), "no Pod of an image that cannot be pulled is left")
	}
}

// Idle Pods go after IdleTTL; a runner starting deletes its previous
// process's Pods, and Pods whose runner's Pod is gone.
func TestRunner_upkeep(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	servers := namespace(t) // where runners' Pods are
	startKubelet(t, ns)
	ctx := context.Background()
	leftover := func(runner string) *corev1.Pod {
		p, err := client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "fn-", Labels: map[string]string{ManagedByLabel: "scion", RunnerLabel: runner}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "function", Image: "registry.example.com/fns/missing:v1"}}},
		}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return p
	}
	mine, orphan, others := leftover("scion-controller-0"), leftover("scion-controller-gone"), leftover("scion-apiserver-1")
	_, err := client.CoreV1().Pods(servers).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "scion-apiserver-1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "apiserver", Image: "scion:test"}}}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	r := newRunner(t, ns, Options{IdleTTL: 2 * time.Second, IdentityNamespace: servers})
	g.Expect(r.RunImage(ctx, image, time.Minute, fnprog.ResourceList("label"))).To(Succeed())
	gone := func(p *corev1.Pod) func() bool {
		return func() bool {
			_, err := client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}
	}
	g.Eventually(gone(mine), 10*time.Second).Should(BeTrue(), "the previous process's Pod")
	g.Eventually(gone(orphan), 10*time.Second).Should(BeTrue(), "the Pod of a runner whose Pod is gone")
	g.Eventually(func() []corev1.Pod {
		var left []corev1.Pod
		for _, p := range pods(t, ns) {
			if p.Labels[RunnerLabel] == "scion-controller-0" {
				left = append(left, p)
			}
		}
		return left
	}, 10*time.Second).Should(BeEmpty(), "idle Pods after IdleTTL")
	g.Consistently(gone(others), 2*time.Second).Should(BeFalse(), "the Pod of a runner that is there")
}
