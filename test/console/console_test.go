package console

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/api/porch/v1alpha1/content"
	"github.com/scion-dev/scion/config/rbac"
	"github.com/scion-dev/scion/internal/console"
	"github.com/scion-dev/scion/internal/manager"
	"github.com/scion-dev/scion/internal/rpkg"
	"github.com/scion-dev/scion/internal/scheme"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
	"github.com/scion-dev/scion/internal/testutil/suite"
	"github.com/scion-dev/scion/internal/testutil/testenv"
)

var (
	env       *testenv.Env
	k8sClient client.Client
)

func TestMain(m *testing.M) {
	os.Exit(suite.Run(m, manager.Options{RepositoryWorkers: 4, PackageRevisionWorkers: 4, PackageVariantWorkers: 4, SyncPeriod: 30 * time.Second}, nil,
		func(e *testenv.Env) {
			env, k8sClient = e, e.Client
			if err := rbac.Install(context.Background(), e.Storage, rbac.UserRoles); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}))
}

// consoleAs serves the console acting as user, bound to role in ns.
func consoleAs(t *testing.T, ns, user, role string) string {
	t.Helper()
	cfg := env.As(t, ns, user, role)
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := console.New(console.Options{Client: c, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(func() {
		// A page still open in the browser holds its event stream.
		srv.CloseClientConnections()
		srv.Close()
		s.Close()
	})
	return srv.URL
}

// page drives a browser tab.
type page struct {
	ctx context.Context
	t   *testing.T
	g   Gomega
}

func newBrowser(t *testing.T, g Gomega) *page {
	return &page{ctx: browser(t), t: t, g: g}
}

func (p *page) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	p.g.Expect(chromedp.Do(p.ctx, steps...)).To(Succeed())
}

// submit clicks the first element sel selects and waits for the page that
// follows to show want. The click is the element's own click(), run in the
// page: a mouse press and release are two steps, and the page's live update
// may replace its content between them (the press on the old button, the
// release on the new one), which is no click at all.
func (p *page) submit(sel, want string) {
	p.t.Helper()
	clicked, err := chromedp.Run(p.ctx, chromedp.Evaluate[bool](`(function(){var e=document.querySelector(`+"`"+sel+"`"+`);if(!e){return false;}e.click();return true;})()`))
	p.g.Expect(err).NotTo(HaveOccurred(), sel)
	p.g.Expect(clicked).To(BeTrue(), "%s is not on the page", sel)
	shows := ""
	p.g.Eventually(func() int {
		n, err := chromedp.Run(p.ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+"`"+want+"`"+`).length`))
		if err != nil {
			return 0 // the page is on its way
		}
		shows, _ = chromedp.Run(p.ctx, chromedp.Evaluate[string](`location.href + "\n" + document.body.innerText`))
		return n
	}).WithTimeout(30*time.Second).WithPolling(100*time.Millisecond).Should(BeNumerically(">", 0), func() string {
		return fmt.Sprintf("after clicking %s, no %s; the page shows:\n%s", sel, want, shows)
	})
}

// text is the visible text of the first element sel selects.
func (p *page) text(sel string) string {
	p.t.Helper()
	s, err := chromedp.Run(p.ctx, chromedp.Text(chromedp.CSS(sel)))
	p.g.Expect(err).NotTo(HaveOccurred(), sel)
	return s
}

// count is how many elements sel selects.
func (p *page) count(sel string) int {
	p.t.Helper()
	n, err := chromedp.Run(p.ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+"`"+sel+"`"+`).length`))
	p.g.Expect(err).NotTo(HaveOccurred(), sel)
	return n
}

// browser starts Debian's headless Chromium (make test installs it).
func browser(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("SCION_CHROMIUM")
	if path == "" {
		var err error
		if path, err = exec.LookPath("chromium"); err != nil {
			t.Fatalf("Chromium is required (make test installs it with hack/install-chromium.sh; or set SCION_CHROMIUM): %v", err)
		}
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true), chromedp.UserDataDir(t.TempDir()))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancel3)
	return ctx
}

// A reviewer's day in the console, in a real browser: the fleet page
// lists the set; the proposals page shows what the proposals change
// (unified and side by side); the targets table shows each target's
// package on its way, then published; an editor's approval is refused and the page says why; an approver's
// publishes; the fleet page follows a change without a reload; a request
// not from the console's pages is refused.
func TestConsole(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns, drafts := proposedFleet(t)
	editor := consoleAs(t, ns, "ed", "scion-editor")
	approver := consoleAs(t, ns, "bob", "scion-approver")
	br := newBrowser(t, g)
	b, do, text, count := br.ctx, br.do, br.text, br.count
	// The fleet.
	do(chromedp.Navigate(approver + "/"))
	g.Expect(text("#sets")).To(And(ContainSubstring("app"), ContainSubstring("base 1")))
	g.Expect(text("#who")).To(ContainSubstring("acting as bob"))

	// The proposals and what they change.
	do(chromedp.Navigate(editor + "/proposals?set=app"))
	main := text("main")
	g.Expect(main).To(ContainSubstring("+  color: blue"))
	g.Expect(main).To(ContainSubstring("cluster-01.app.packagevariant-1"))
	g.Expect(main).To(ContainSubstring("compared with: nothing (a first revision)"))
	g.Expect(main).To(ContainSubstring("config.porch.kpt.dev/packagevariant: True"), "each revision's readiness gates")

	// The same, side by side: the old line left, the new right.
	br.submit("#side-by-side", "table.split")
	g.Expect(text("main")).To(MatchRegexp(`\n\s*color: blue\n`), "the new line alone on the right")
	g.Expect(count("table.split td.add")).To(BeNumerically(">=", 1))
	g.Expect(count("pre.diff")).To(Equal(0), "side by side replaces the unified view")

	// The fleet as a table: each target's package on its way.
	do(chromedp.Navigate(editor + "/targets"))
	g.Expect(text("#targets")).To(MatchRegexp(`cluster-01\s+– → Proposed \(base v1\)\s`), "the upstream and version the proposal carries")
	g.Expect(text("#targets")).To(MatchRegexp(`catalog\s+v1`), "the blueprint, published")

	// An editor may not approve: refused by Kubernetes, and said so.
	do(chromedp.Navigate(editor + "/proposals?set=app"))
	br.submit(`#group-0 button[value=approve]`, "#outcomes")
	out := text("#outcomes")
	g.Expect(out).To(ContainSubstring("cluster-0"))
	g.Expect(out).NotTo(ContainSubstring("is Published"))
	g.Expect(count("#outcomes .error")).To(BeNumerically(">=", 1), out)
	for _, n := range drafts {
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, pr)).To(Succeed())
		g.Expect(pr.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecycleProposed), "nothing approved")
	}

	// An approver approves every proposal of the set, a group at a time.
	do(chromedp.Navigate(approver+"/proposals?set=app"), chromedp.WaitVisible(chromedp.CSS("#group-0")))
	groups := count("section.group")
	g.Expect(groups).To(BeNumerically(">=", 1))
	for i := range groups {
		do(chromedp.Navigate(approver + "/proposals?set=app"))
		br.submit(`#group-0 button[value=approve]`, "#outcomes")
		g.Expect(text("#outcomes")).To(ContainSubstring("is Published"), "group %d", i)
	}
	for _, n := range drafts {
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, pr)).To(Succeed())
		g.Expect(pr.GitLifecycle()).To(Equal(porchv1alpha1.LifecyclePublished))
		g.Expect(pr.Annotations).To(HaveKeyWithValue(porchv1alpha1.ApprovedByAnnotation, "bob"))
	}
	g.Eventually(func() string { // the console's view follows the watch
		do(chromedp.Navigate(approver + "/proposals?set=app"))
		return text("main")
	}).WithTimeout(10 * time.Second).Should(ContainSubstring("Nothing to review."))
	// The package's history: who proposed it and when, who approved it
	// and when.
	do(chromedp.Navigate(approver + "/package?repository=cluster-01&package=app"))
	g.Expect(text(".record")).To(MatchRegexp(`^proposed by \S+ at 20\d\d-\d\d-\d\dT\d\d:\d\d:\d\dZ · approved by bob at 20\d\d-`))
	// The table follows: both targets at v1, nothing on its way.
	g.Eventually(func() string {
		do(chromedp.Navigate(approver + "/targets?package=app"))
		return text("#targets")
	}).WithTimeout(10 * time.Second).Should(And(MatchRegexp(`cluster-01\s+v1 \(base v1\)\s+cluster-02\s+v1 \(base v1\)`), Not(ContainSubstring("Proposed"))))

	// The fleet page follows a change without a reload.
	do(chromedp.Navigate(approver + "/"))
	g.Expect(text("#summary")).To(Equal("2 of 2 PackageVariants Ready."))
	g.Eventually(live(b)).Should(BeTrue(), "the page has opened its event stream")
	g.Expect(k8sClient.Create(ctx, &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: "extra", Namespace: ns}, Spec: configv1alpha1.PackageVariantSpec{
		Upstream:   &configv1alpha1.Upstream{Repo: "catalog", Package: "base", Revision: "1"},
		Downstream: &configv1alpha1.Downstream{Repo: "cluster-01", Package: "extra"},
	}})).To(Succeed())
	g.Eventually(func() string {
		s, _ := chromedp.Run(b, chromedp.Text(chromedp.CSS("#summary")))
		return s
	}).WithTimeout(30 * time.Second).WithPolling(300 * time.Millisecond).Should(MatchRegexp(`^\d of 3 PackageVariants Ready\.$`))

	// A request from elsewhere (no token) changes nothing.
	res, err := http.PostForm(approver+"/revisions", url.Values{"verb": {"reject"}, "revision": drafts})
	g.Expect(err).NotTo(HaveOccurred())
	res.Body.Close()
	g.Expect(res.StatusCode).To(Equal(http.StatusForbidden))

	if dir := os.Getenv("SCION_CONSOLE_SCREENSHOTS"); dir != "" {
		for name, page := range map[string]string{"fleet": "/", "history": "/package?repository=cluster-01&package=app", "targets": "/targets",
			"history-split": "/package?repository=cluster-01&package=app&view=split"} {
			do(chromedp.EmulateViewport(1280, 900), chromedp.Navigate(approver+page))
			png, err := chromedp.Run(b, chromedp.FullScreenshot(100))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(os.WriteFile(filepath.Join(dir, "console-"+name+".png"), png, 0o644)).To(Succeed())
		}
	}
}

// proposedFleet makes a namespace with a catalog (base v1 published, a
// ConfigMap with color: blue) and two deployment repositories, a
// PackageVariantSet app over them, and proposes its two drafts.
func proposedFleet(t *testing.T) (string, []string) {
	t.Helper()
	ns, drafts := draftFleet(t, "")
	admin := &rpkg.Client{Client: k8sClient, Namespace: ns, Timeout: time.Minute}
	for _, r := range rpkg.Batch(context.Background(), drafts, admin.Propose) {
		NewWithT(t).Expect(r.Err).NotTo(HaveOccurred())
	}
	return ns, drafts
}

// draftFleet is a blueprint (base, with the readiness gate gate when not
// empty) published in a catalog and a set's drafts of it in two clusters.
func draftFleet(t *testing.T, gate string) (string, []string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.Namespace(t, "console")
	root := gitserver.Root(t)
	for name, deployment := range map[string]bool{"catalog": false, "cluster-01": true, "cluster-02": true} {
		bare := gitserver.InitBare(t, root, name+".git")
		g.Expect(k8sClient.Create(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: configv1alpha1.RepositorySpec{Deployment: deployment, Git: &configv1alpha1.GitRepository{Repo: "file://" + bare, CreateBranch: true}}})).To(Succeed())
	}
	admin := &rpkg.Client{Client: k8sClient, Namespace: ns, Timeout: time.Minute}
	_, err := admin.Init(ctx, rpkg.CreateOptions{Repository: "catalog", Package: "base", Workspace: "v1"}, porchv1alpha1.PackageInitTaskSpec{Description: "base"})
	g.Expect(err).NotTo(HaveOccurred())
	prr := &content.PackageRevisionResources{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "catalog.base.v1"}, prr)).To(Succeed())
	prr.Spec.Resources["settings.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  color: blue\n"
	if gate != "" {
		kf := prr.Spec.Resources["Kptfile"]
		g.Expect(kf).To(ContainSubstring("info:\n"))
		prr.Spec.Resources["Kptfile"] = strings.Replace(kf, "info:\n", "info:\n  readinessGates:\n  - conditionType: "+gate+"\n", 1)
	}
	g.Expect(k8sClient.Update(ctx, prr)).To(Succeed())
	for _, move := range []func(context.Context, string) (*porchv1alpha1.PackageRevision, error){admin.Propose, admin.Approve} {
		_, err := move(ctx, "catalog.base.v1")
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(k8sClient.Create(ctx, &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: configv1alpha2.PackageVariantSetSpec{
		Upstream: &configv1alpha1.Upstream{Repo: "catalog", Package: "base", Revision: "1"},
		Targets: []configv1alpha2.Target{{Repositories: []configv1alpha2.RepositoryTarget{
			{Name: "cluster-01", PackageNames: []string{"app"}}, {Name: "cluster-02", PackageNames: []string{"app"}}}}},
	}})).To(Succeed())
	drafts := []string{"cluster-01.app.packagevariant-1", "cluster-02.app.packagevariant-1"}
	g.Eventually(func(g Gomega) {
		for _, n := range drafts {
			pr := &porchv1alpha1.PackageRevision{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, pr)).To(Succeed())
			g.Expect(pr.Status.Commit).NotTo(BeEmpty())
		}
	}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	return ns, drafts
}

// Drafts proposed from the console; a group whose readiness gates are not
// met offers no approval that would be refused, but says what it waits
// for and links to it; once the gates are True, the approval is offered.
func TestConsole_proposeAndGates(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns, drafts := draftFleet(t, "example.com/canary")
	editor := consoleAs(t, ns, "ed", "scion-editor")
	approver := consoleAs(t, ns, "bob", "scion-approver")
	br := newBrowser(t, g)
	do, text, count := br.do, br.text, br.count

	do(chromedp.Navigate(editor + "/proposals?set=app&lifecycle=Draft"))
	g.Expect(count(`#group-0 button[value=approve]`)).To(Equal(0), "drafts are proposed, not approved")
	br.submit(`#group-0 button[value=propose]`, "#outcomes")
	for _, n := range drafts {
		g.Expect(text("#outcomes")).To(ContainSubstring(n + " is Proposed"))
		pr := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, pr)).To(Succeed())
		g.Expect(pr.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecycleProposed))
	}

	do(chromedp.Navigate(approver + "/proposals?set=app"))
	g.Expect(count(`#group-0 button[value=approve]`)).To(Equal(0), "an approval now would be refused")
	g.Expect(text("#group-0 .blocked")).To(And(ContainSubstring("Approval waits for readiness gates"),
		ContainSubstring(drafts[0]+": example.com/canary: not set"), ContainSubstring("the Drafts")))
	g.Expect(count(`#group-0 .blocked a[href="/package?repository=cluster-01&package=app"]`)).To(Equal(1))
	if dir := os.Getenv("SCION_CONSOLE_SCREENSHOTS"); dir != "" {
		do(chromedp.EmulateViewport(1280, 700), chromedp.Navigate(approver+"/proposals?set=app"))
		png, err := chromedp.Run(br.ctx, chromedp.FullScreenshot(100))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(os.WriteFile(filepath.Join(dir, "console-proposals-blocked.png"), png, 0o644)).To(Succeed())
	}

	admin := &rpkg.Client{Client: k8sClient, Namespace: ns, Timeout: time.Minute}
	for _, n := range drafts {
		_, err := admin.SetCondition(ctx, n, porchv1alpha1.Condition{Type: "example.com/canary", Status: "True", Reason: "Passed"})
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Eventually(func() int {
		do(chromedp.Navigate(approver + "/proposals?set=app"))
		return count(`#group-0 button[value=approve]`)
	}).WithTimeout(10 * time.Second).Should(Equal(1))
	g.Expect(count("#group-0 .blocked")).To(Equal(0))
}

// A rollout's wave approved in the browser: a viewer is refused and the
// page says why; an approver's approval starts the wave, which the page
// shows advancing (canary complete, the next wave awaiting approval).
func TestConsoleRollout(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns, _ := proposedFleet(t)
	ro := &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Name: "release", Namespace: ns}, Spec: configv1alpha1.PackageRolloutSpec{
		RevisionSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: configv1alpha1.PackageVariantLabel, Operator: metav1.LabelSelectorOpExists}}},
		Waves:            []configv1alpha1.RolloutWave{{Name: "canary", MaxTargets: ptr.To[int32](1)}},
		Approval:         configv1alpha1.RolloutApprovalManual,
	}}
	g.Expect(k8sClient.Create(ctx, ro)).To(Succeed())
	viewer := consoleAs(t, ns, "vera", "scion-viewer")
	approver := consoleAs(t, ns, "bob", "scion-approver")
	p := newBrowser(t, g)
	waves := func(base string) string {
		p.do(chromedp.Navigate(base + "/rollouts"))
		if p.count("#rollout-release") == 0 {
			return p.text("main") // not there (yet): say what the page shows
		}
		return p.text("#rollout-release")
	}
	g.Eventually(func() string { return waves(approver) }).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(MatchRegexp(`canary\s+AwaitingApproval`))
	// Waiting for a person is amber and says so (not the red False of a
	// failed rollout), with the actions of a rollout still moving.
	g.Expect(p.text("#rollout-release h2")).To(HaveSuffix("AwaitingApproval"))
	g.Expect(p.count("#rollout-release h2 .state-AwaitingApproval")).To(Equal(1))
	g.Expect(p.count("#rollout-release button[value=abort]")).To(Equal(1))

	// Someone who may not read rollouts is told so, not shown a blank page.
	editor := consoleAs(t, ns, "ed", "scion-editor")
	p.do(chromedp.Navigate(editor + "/rollouts"))
	g.Expect(p.text("#error")).To(And(ContainSubstring("listing PackageRollouts"), ContainSubstring("forbidden")))

	// A viewer sees the rollout but may not approve its wave.
	g.Expect(waves(viewer)).To(MatchRegexp(`canary\s+AwaitingApproval`))
	p.submit(`#rollout-release button[value=approve]`, "#outcomes")
	g.Expect(p.count("#outcomes .error")).To(Equal(1), p.text("#outcomes"))
	g.Expect(p.text("#outcomes")).To(ContainSubstring("release"))
	cur := &configv1alpha1.PackageRollout{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ro), cur)).To(Succeed())
	g.Expect(cur.Spec.ApprovedWaves).To(BeEmpty())

	// An approver does; the wave advances on the page. The viewer's
	// console stays open in another tab of the same browser and is visited
	// last: two consoles on one host keep their tokens apart.
	waves(approver)
	tab, closeTab := chromedp.NewContext(p.ctx)
	defer closeTab()
	g.Expect(chromedp.Do(tab, chromedp.Navigate(viewer+"/rollouts"))).To(Succeed())
	p.submit(`#rollout-release button[value=approve]`, "#outcomes")
	g.Expect(p.text("#outcomes")).To(ContainSubstring("release wave canary approved"))
	// The outcome stays on the screen while the rollout it changed moves
	// on (the result is served at /rollouts: a live redraw would replace
	// it with the rollouts page).
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ro), cur)).To(Succeed())
		g.Expect(cur.Status.Waves).NotTo(BeEmpty())
		g.Expect(cur.Status.Waves[0].State).To(Equal(configv1alpha1.WaveComplete))
	}).WithTimeout(time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())
	time.Sleep(1500 * time.Millisecond) // a redraw would have come by now
	g.Expect(p.text("#outcomes")).To(ContainSubstring("release wave canary approved"))
	g.Eventually(func() string { return waves(approver) }).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(
		And(MatchRegexp(`canary\s+Complete\s+1\s+1\s+1\s+0`), MatchRegexp(`remainder\s+AwaitingApproval`), ContainSubstring("bob")))

	// The wave × target grid: the canary's target published and healthy,
	// the remainder's not published, who approved the canary and when.
	p.do(chromedp.Navigate(approver + "/rollout?name=release"))
	g.Expect(p.count("#grid .wave-Complete .sq.healthy")).To(Equal(1))
	g.Expect(p.count("#grid .wave-AwaitingApproval .sq.pending")).To(Equal(1))
	g.Expect(p.text("#grid")).To(MatchRegexp(`canary\s+Complete[\s\S]*1 of 1 published, 1 healthy[\s\S]*bob\s+20\d\d-\d\d-\d\d \d\d:\d\d:\d\d UTC`))
	g.Expect(p.text("#notwell")).To(MatchRegexp(`cluster-0\d.app.packagevariant-1\s+cluster-0\d\s+no`), "the remainder's target, not published")
	p.do(chromedp.Navigate(approver + "/rollout?name=nosuch"))
	g.Expect(p.text("#error")).To(ContainSubstring("reading PackageRollout nosuch"))

	// The last wave approved: the rollout is Complete, green, and offers
	// nothing to pause or abort.
	waves(approver)
	p.submit(`#rollout-release button[value=approve]`, "#outcomes")
	g.Eventually(func() string {
		waves(approver)
		return p.text("#rollout-release h2")
	}).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(HaveSuffix("Complete"))
	g.Expect(p.count("#rollout-release h2 .state-Complete")).To(Equal(1))
	g.Expect(p.count("#rollout-release button[value=abort]") + p.count("#rollout-release button[value=pause]")).To(Equal(0))

	if dir := os.Getenv("SCION_CONSOLE_SCREENSHOTS"); dir != "" {
		p.do(chromedp.EmulateViewport(1280, 700), chromedp.Navigate(approver+"/rollout?name=release"))
		png, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(os.WriteFile(filepath.Join(dir, "console-rollout.png"), png, 0o644)).To(Succeed())
	}
}

// The dependencies page: every deployment repository's lock, each
// conflict with what it keeps from being installed, one lock whole; and
// someone who may not read locks is told so.
func TestConsoleLocks(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ctx := context.Background()
	ns, _ := proposedFleet(t)
	viewer := consoleAs(t, ns, "vera", "scion-viewer")
	p := newBrowser(t, g)
	g.Eventually(func() string {
		p.do(chromedp.Navigate(viewer + "/locks"))
		return p.text("#locks")
	}).WithTimeout(time.Minute).Should(And(ContainSubstring("cluster-01"), ContainSubstring("cluster-02")))
	g.Expect(p.text("#conflicts")).To(ContainSubstring("no conflicts"))

	// A lock holding a conflict (as the Repository controller writes one
	// when two packages provide a kind: test/dependencies makes real ones).
	lock := &configv1alpha1.PackageLock{ObjectMeta: metav1.ObjectMeta{Name: "edge-07", Namespace: ns},
		Packages: []configv1alpha1.LockedPackage{{Name: "cert-manager", Version: "1.0.0", Directory: "cert-manager", State: configv1alpha1.LockedPublished, Provides: []string{"cert-manager.io/v1/Certificate"}}},
		Conflicts: []configv1alpha1.LockConflict{{Kind: "cert-manager.io/v1/Certificate", Packages: []string{"cert-manager", "certs-lite"}, RequiredBy: []string{"web"},
			Message: "cert-manager.io/v1/Certificate is provided by cert-manager and certs-lite"}}}
	g.Eventually(live(p.ctx)).Should(BeTrue(), "the open page has started its event stream")
	g.Expect(k8sClient.Create(ctx, lock)).To(Succeed())
	// The open page shows it without a reload.
	g.Eventually(func() string {
		s, _ := chromedp.Run(p.ctx, chromedp.Text(chromedp.CSS("#conflicts")))
		return s
	}).WithTimeout(30 * time.Second).WithPolling(300 * time.Millisecond).Should(ContainSubstring("edge-07"))
	g.Expect(p.text("#conflicts")).To(MatchRegexp(`edge-07\s+cert-manager.io/v1/Certificate\s+cert-manager, certs-lite\s+web\s+cert-manager.io/v1/Certificate is provided by`))
	p.submit(`#conflicts a`, "#lock")
	g.Expect(p.text("#lock")).To(MatchRegexp(`cert-manager\s+1.0.0\s+cert-manager\s+Published\s+cert-manager.io/v1/Certificate`))
	p.do(chromedp.Navigate(viewer + "/proposals?lifecycle=Bogus"))
	g.Expect(p.text("#error")).To(ContainSubstring("?lifecycle=Bogus: one of Proposed, Draft, Published, DeletionProposed"))
	p.do(chromedp.Navigate(viewer + "/locks?repository=nosuch"))
	g.Expect(p.text("#error")).To(ContainSubstring("repository nosuch has no PackageLock"))

	// Someone with no role here is told what Kubernetes refused, at once.
	nobody := consoleAs(t, ns, "rita", "")
	p.do(chromedp.Navigate(nobody + "/locks"))
	g.Expect(p.text("#error")).To(And(ContainSubstring("listing PackageLocks"), ContainSubstring("forbidden")))
	p.do(chromedp.Navigate(nobody + "/targets"))
	g.Expect(p.text("#error")).To(And(ContainSubstring("listing PackageRevisions"), ContainSubstring("forbidden")))
}

// live says whether the page in ctx has its event stream open (the mark
// console.js sets): from then on every change reaches it.
func live(ctx context.Context) func() bool {
	return func() bool {
		open, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.dataset.live === "open"`))
		return open
	}
}
