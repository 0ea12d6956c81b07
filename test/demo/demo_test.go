// Package demo_test runs `scion dev demo`, what `make demo` runs, end to
// end: a local control plane from bin/k8s, the fleet in a box, the
// walk-through three times (a later run, after a whole or an interrupted
// one, tells the same story), then dev down and dev up with
// the state kept.
package demo_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/scheme"
	"github.com/scion-dev/scion/internal/tree"
)

func init() { ctrl.SetLogger(logr.Discard()) }

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// buildScion builds the scion binary once for the package's tests.
func buildScion(t *testing.T, root string) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "scion-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "scion")
		build := exec.Command("go", "build", "-o", binPath, "./cmd/scion")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// A step that fails is named, with its log; nothing keeps running.
func TestDevUpFailure(t *testing.T) {
	g := NewWithT(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	g.Expect(err).NotTo(HaveOccurred())
	bin := buildScion(t, root)
	assets := t.TempDir()
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		g.Expect(os.WriteFile(filepath.Join(assets, b), []byte("#!/bin/sh\necho \"$0: cannot start\" >&2\nexit 1\n"), 0o755)).To(Succeed())
	}
	dir := filepath.Join(t.TempDir(), "dev")
	out, err := exec.Command(bin, "dev", "up", "--dir", dir, "--assets", assets).CombinedOutput()
	g.Expect(err).To(HaveOccurred(), string(out))
	g.Expect(string(out)).To(ContainSubstring("==> starting etcd and kube-apiserver"))
	g.Expect(string(out)).To(ContainSubstring("dev up failed at starting etcd and kube-apiserver:"))
	g.Expect(string(out)).To(MatchRegexp(`\(log: .*/dev/(etcd|kube-apiserver)\.log\)`))
	g.Expect(filepath.Join(dir, "serve.pid")).NotTo(BeAnExistingFile(), "the supervisor is gone")

	// Without binaries, outside a checkout (no build script), it says what
	// to do.
	cmd := exec.Command(bin, "dev", "up", "--dir", dir, "--assets", t.TempDir())
	cmd.Dir = t.TempDir()
	out, err = cmd.CombinedOutput()
	t.Cleanup(func() { _ = exec.Command(bin, "dev", "down", "--dir", dir).Run() })
	g.Expect(err).To(HaveOccurred(), string(out))
	g.Expect(string(out)).To(ContainSubstring("the control plane binaries are not in"))
}

func TestDevDemo(t *testing.T) {
	g := NewWithT(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	g.Expect(err).NotTo(HaveOccurred())
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(root, "bin", "k8s")
	}
	bin := buildScion(t, root)

	dir := filepath.Join(t.TempDir(), "dev")
	scion := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--dir", dir, "--assets", assets)...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "scion %s:\n%s\nthe controller's log ends:\n%s", strings.Join(args, " "), out, logTail(filepath.Join(dir, "controller.log"), 80))
		return string(out)
	}
	t.Cleanup(func() { _ = exec.Command(bin, "dev", "down", "--dir", dir).Run() })

	// Three runs: the first whole; the second stopped with Ctrl-C while
	// a rollout halts; the third whole again. Each later run finds what
	// the one before left, says so, and tells the same story with the
	// same upstream revisions.
	for run := 1; run <= 3; run++ {
		if run == 2 {
			// The namespace is not the demo's alone: a variant someone
			// else made, that is never Ready, is not waited for.
			cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
			g.Expect(err).NotTo(HaveOccurred())
			c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(c.Create(context.Background(), &configv1alpha1.PackageVariant{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "someone-elses"},
				Spec: configv1alpha1.PackageVariantSpec{
					Upstream:   &configv1alpha1.Upstream{Repo: "no-such-repo", Package: "app", Revision: "1"},
					Downstream: &configv1alpha1.Downstream{Repo: "cluster-01", Package: "someone-elses"},
				},
			})).To(Succeed())
			out := interrupt(t, exec.Command(bin, "dev", "demo", "--examples", filepath.Join(root, "examples"), "--dir", dir, "--assets", assets), "the us-west wave halts")
			g.Expect(out).To(ContainSubstring("==> an earlier run of the demo left: PackageRollout regional-app-v2 (Complete); PackageRollout regional-app-v3 (Failed); PackageRollout shop-v1 (Complete); PackageVariantSet regional-app at v2; PackageVariant regional-app-cluster-06-web held by config.porch.kpt.dev/hold-upstream\n"))
			g.Expect(out).To(MatchRegexp(`\n    6 revisions published again at the examples' revisions\n`), "the six clusters of regional-app go back to v1")
			g.Expect(out).To(ContainSubstring("==> the platform team publishes regional-app v2 (image registry.example.com/web:1.1.0); the set moves to it\n    (published by an earlier run: the same revision again)"))
			continue
		}
		out := scion("dev", "demo", "--examples", filepath.Join(root, "examples"))
		if run == 3 {
			// What the stopped run left: the halted rollout, its
			// proposals, the set on the good revision.
			g.Expect(out).To(MatchRegexp(`==> an earlier run of the demo left: PackageRollout regional-app-v2 \(\w+\); PackageVariantSet regional-app at v2; \d+ revisions Proposed \(`))
			g.Expect(out).To(MatchRegexp(`\n    \d+ revisions published again at the examples' revisions\n`))
		}
		// 12 variants, 12 of widget-app and the 12 dependencies they
		// installed, 12 of the shop group; later runs also have the
		// conflicting one and someone else's.
		g.Expect(out).To(ContainSubstring(fmt.Sprintf("%d of %d PackageVariants ready", 47+min(run, 2), 47+min(run, 2))), "run %d", run)
		// The group: each eu-west cluster's three revisions released
		// together; the cluster whose member is held back waits, named.
		g.Expect(out).To(MatchRegexp(`cluster-10 waits, with nothing of its group published: wave remainder: \d of 3 published, \d healthy: cluster-10 waits for its group: shop-policy \(cluster-10\.shop-policy\.\S+\) is Draft, not Proposed`), "run %d", run)
		g.Expect(out).To(MatchRegexp(`Wave/remainder  Complete  Ready=True  3 targets, 3 published, 3 healthy`), "run %d", run)
		if run == 3 {
			g.Expect(out).To(ContainSubstring("PackageVariantSet shop: shop-app v1 -> v2, shop-config v1 -> v2, shop-policy v1 -> v2 (12 variants)"))
			g.Expect(out).To(ContainSubstring("==> the platform team publishes v2 of the shop group (shop-app, shop-config, shop-policy)"), "the group's second release, the same revisions every run")
		}
		g.Expect(out).To(ContainSubstring("Dependency/widget-crds  Ready=True  1.0.0 Satisfied in widget-crds (Published 1.0.0), installed by PackageVariant/cluster-01.widget-crds.dependency"), "run %d", run)
		g.Expect(out).To(MatchRegexp(`cluster-01.widgets-legacy.packagevariant-\d+ is Proposed → Published \(waiting: PackageConflict: kind example.com/v1/Widget is provided by widget-crds, Published in this repo`), "run %d", run)
		g.Expect(out).To(ContainSubstring("PackageVariantSet/regional-app  Ready=True  6/6 ready"), "run %d", run)
		g.Expect(out).To(ContainSubstring("PackageVariantSet/tenants  Ready=True  3/3 ready"), "run %d", run)
		g.Expect(out).To(ContainSubstring("PackageVariantSet/team-sandboxes  Ready=True  2/2 ready"), "run %d", run)
		g.Expect(out).To(ContainSubstring("+  DATABASE_URL: postgres://db.us-east.example.com:5432/web"), "run %d: the diff shows the injected endpoints", run)
		g.Expect(out).To(ContainSubstring("updated in place; the downstream edit is kept"), "run %d", run)
		g.Expect(out).To(MatchRegexp(`refused, nothing recorded: .*readiness gates not met: example.com/canary-passed \(not set\)`), "run %d", run)
		g.Expect(out).To(MatchRegexp(`cluster-01\.web\.packagevariant-\d+ is Published`), "run %d", run)
		// The bad release is rolled back, and the rollback sticks: every
		// run's bad release is regional-app v3.
		g.Expect(out).To(ContainSubstring("==> a bad release: the platform team publishes regional-app v3 "), "run %d", run)
		g.Expect(out).To(MatchRegexp(`Wave/canary  Failed  Ready=False  1 targets, 1 published, 0 healthy, 1 failed, 1 rolled back`), "run %d", run)
		g.Expect(out).To(MatchRegexp(`the rollback sticks: PackageVariant regional-app-cluster-06-web has config.porch.kpt.dev/hold-upstream=[0-9a-f]{40} and writes no new draft, although the set still names v3`), "run %d", run)
		g.Expect(out).To(MatchRegexp(`UpdateAvailable=True UpstreamHeld: regional-app revision 3 \(commit [0-9a-f]{12}\) was rolled back .*: the variant stays on revision 2 until the upstream moves past it`), "run %d", run)
		// A blueprint served from the environment's OCI registry, varied
		// into a deployment repository in it, published there.
		if run == 1 {
			g.Expect(out).To(MatchRegexp(`published blueprint tenant-ns v1 as oci://127\.0\.0\.1:\d+/blueprints/tenant-ns:v1 \(sha256:[0-9a-f]{64}\)`))
		}
		g.Expect(out).To(MatchRegexp(`upstreamLock\.oci\.image 127\.0\.0\.1:\d+/blueprints/tenant-ns:v1, digest sha256:[0-9a-f]{64}`), "run %d", run)
		g.Expect(out).To(MatchRegexp(`edge-01\.tenant-ns\.packagevariant-\d+ is Published: oci://127\.0\.0\.1:\d+/sites/edge-01/tenant-ns:v1 \(sha256:[0-9a-f]{64}\)`), "run %d", run)
		if run == 1 {
			g.Expect(out).NotTo(ContainSubstring("an earlier run"))
			// What the getting-started guide shows is what the demo prints.
			guide, err := os.ReadFile(filepath.Join(root, "docs", "getting-started.md"))
			g.Expect(err).NotTo(HaveOccurred())
			lines := shownLines(string(guide))
			g.Expect(len(lines)).To(BeNumerically(">", 20), "the guide's output blocks are read")
			for _, line := range lines {
				if !shownIn(line, out) {
					t.Errorf("docs/getting-started.md shows %q; the demo printed nothing like it", line)
				}
			}
		}
		g.Expect(out).To(ContainSubstring("export KUBECONFIG=" + filepath.Join(dir, "kubeconfig")))
		g.Expect(out).To(ContainSubstring(" console --kubeconfig " + filepath.Join(dir, "kubeconfig") + ", then open http://127.0.0.1:8080/"))
	}
	// Three runs end where one does: the upstream at the same revisions,
	// the story's rollouts those of one run.
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	g.Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	g.Expect(err).NotTo(HaveOccurred())
	catalog := &porchv1alpha1.PackageRevisionList{}
	g.Expect(c.List(context.Background(), catalog, client.InNamespace("default"))).To(Succeed())
	upstream := map[string]int{}
	for _, pr := range catalog.Items {
		if pr.Spec.Repository == "blueprints" {
			upstream[pr.Spec.PackageName]++
		}
	}
	g.Expect(upstream).To(HaveKeyWithValue("regional-app", 3), "v1, the good v2, the bad v3")
	for _, p := range []string{"shop-app", "shop-config", "shop-policy"} {
		g.Expect(upstream).To(HaveKeyWithValue(p, 2), p)
	}
	rollouts := &configv1alpha1.PackageRolloutList{}
	g.Expect(c.List(context.Background(), rollouts, client.InNamespace("default"))).To(Succeed())
	states := map[string]string{}
	for i := range rollouts.Items {
		states[rollouts.Items[i].Name] = tree.RolloutState(&rollouts.Items[i])
	}
	g.Expect(states).To(Equal(map[string]string{"regional-app-v2": "Complete", "regional-app-v3": "Failed", "shop-v2": "Complete"}))

	// The getting-started guide's commands after make demo run as written,
	// copied and pasted into a shell at the top of a checkout.
	guide, err := os.ReadFile(filepath.Join(root, "docs", "getting-started.md"))
	g.Expect(err).NotTo(HaveOccurred())
	block := shellBlock(string(guide), "export KUBECONFIG")
	g.Expect(block).NotTo(BeEmpty(), "the guide has its Explore commands")
	checkout := t.TempDir()
	g.Expect(os.MkdirAll(filepath.Join(checkout, ".scion"), 0o755)).To(Succeed())
	g.Expect(os.Symlink(dir, filepath.Join(checkout, ".scion", "dev"))).To(Succeed())
	g.Expect(os.MkdirAll(filepath.Join(checkout, "bin"), 0o755)).To(Succeed())
	g.Expect(os.Symlink(bin, filepath.Join(checkout, "bin", "scion"))).To(Succeed())
	sh := exec.Command("bash", "-euo", "pipefail", "-c", block)
	sh.Dir = checkout
	out, err := sh.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "the guide's commands:\n%s\n%s", block, out)
	g.Expect(string(out)).To(ContainSubstring("PackageVariantSet/regional-app"))
	g.Expect(string(out)).To(ContainSubstring("regional-app-cluster-01-web"))

	// dev down keeps the state; dev up brings it back, the registry on
	// the same address with what was published in it.
	registry, err := os.ReadFile(filepath.Join(dir, "registry-address"))
	g.Expect(err).NotTo(HaveOccurred())
	scion("dev", "down")
	g.Expect(scion("dev", "up")).To(ContainSubstring("==> ready"))
	again, err := os.ReadFile(filepath.Join(dir, "registry-address"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(again)).To(Equal(string(registry)))
	resp, err := http.Get("http://" + strings.TrimSpace(string(registry)) + "/v2/sites/edge-01/tenant-ns/tags/list")
	g.Expect(err).NotTo(HaveOccurred())
	tags, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	g.Expect(string(tags)).To(ContainSubstring(`"v1"`))
	// dev up starts the API server on a port of its own: a new client.
	cfg, err = clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	g.Expect(err).NotTo(HaveOccurred())
	c, err = client.New(cfg, client.Options{Scheme: scheme.New()})
	g.Expect(err).NotTo(HaveOccurred())
	set := &configv1alpha2.PackageVariantSet{}
	g.Expect(c.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "regional-app"}, set)).To(Succeed())
	g.Expect(set.Spec.Upstream.Revision).To(Equal(configv1alpha1.RevisionNumber("v2")), "every run moves the set to the good v2, then the bad v3, and pins it back to v2")
	scion("dev", "down")
}

// interrupt runs cmd until it prints a line holding after, then stops it
// as Ctrl-C does (SIGINT), and returns what it printed.
func interrupt(t *testing.T, cmd *exec.Cmd, after string) string {
	t.Helper()
	r, w := io.Pipe()
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); _ = w.Close() }()
	var out strings.Builder
	sc := bufio.NewScanner(r)
	sent := false
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if !sent && strings.Contains(sc.Text(), after) {
			sent = true
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
		}
	}
	err := <-done
	if !sent {
		t.Fatalf("the command ended (%v) before printing %q:\n%s", err, after, out.String())
	}
	if err == nil {
		t.Fatalf("the command stopped by SIGINT exited 0:\n%s", out.String())
	}
	return out.String()
}

// shellBlock returns the first ```sh block of a Markdown text that holds
// marker.
func shellBlock(md, marker string) string {
	for _, part := range strings.Split(md, "```sh\n")[1:] {
		block, _, _ := strings.Cut(part, "```")
		if strings.Contains(block, marker) {
			return block
		}
	}
	return ""
}

// notCompared begins the comment that marks an output block of the guide
// the test's first run does not print (a second run's; make demo as
// root's, cluster-06 on a real node, which test/cluster checks).
const notCompared = "<!-- not compared"

// shownLines are the lines of the guide's output blocks (``` without a
// language) that the demo prints: its steps ("==> ...") and the lines of
// objects in its trees ("PackageRollout/...", "└─Wave/..."), but for
// blocks marked notCompared.
func shownLines(md string) []string {
	var out []string
	step := regexp.MustCompile(`^(==> |[│├└─ ]*[A-Z][A-Za-z]+/\S+  )`)
	inBlock, shown, before := false, false, ""
	for _, l := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(l, "```"):
			// An opening fence without a language starts an output block,
			// unless the line before marks it.
			if !inBlock {
				shown = l == "```" && !strings.HasPrefix(before, notCompared)
			}
			inBlock = !inBlock
		case inBlock && shown && step.MatchString(l):
			out = append(out, l)
		}
		if strings.TrimSpace(l) != "" {
			before = strings.TrimSpace(l)
		}
	}
	return out
}

// shownIn says whether the demo printed a line the guide shows: "..."
// stands for any text, PORT for a port, scion for the command as the demo
// prints it (bin/scion, or a path); spaces, and a tree's wrapping, are
// not compared.
func shownIn(line, out string) bool {
	flat := func(s string) string { return strings.Join(strings.Fields(strings.ReplaceAll(s, "│", " ")), " ") }
	pat := regexp.QuoteMeta(flat(line))
	pat = strings.ReplaceAll(pat, `\.\.\.`, `.*?`)
	pat = strings.ReplaceAll(pat, "PORT", `\d+`)
	pat = regexp.MustCompile(`(^|[ >&])scion `).ReplaceAllString(pat, `$1\S*scion `)
	return regexp.MustCompile(pat).MatchString(flat(out))
}

// logTail is the last n lines of a log, for a failure's message.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
