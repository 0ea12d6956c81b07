package packagevariant_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/console"
	"github.com/scion-dev/scion/internal/metrics"
	"github.com/scion-dev/scion/internal/oci"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/rpkg"
	"github.com/scion-dev/scion/internal/testutil/cpustat"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
	"github.com/scion-dev/scion/internal/testutil/porchcalls"
	"github.com/scion-dev/scion/internal/testutil/suite"
	"github.com/scion-dev/scion/internal/testutil/testenv"
	"github.com/scion-dev/scion/internal/testutil/variantwatch"
	"github.com/scion-dev/scion/internal/tree"
)

// benchApp is a 20-resource package with a required injection point.
func benchApp(replicas int) *pkg.Package {
	p := appPackage(fmt.Sprint(replicas))
	for i := 0; i < 17; i++ {
		_ = p.SetFile(fmt.Sprintf("cm-%02d.yaml", i), []byte(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\n  namespace: example\ndata:\n  key: value-%d\n", i, replicas)))
	}
	return p
}

// BenchmarkPackageVariants creates N PackageVariants (SCION_BENCH_VARIANTS,
// 1,000 by default; `make bench-scale N=...`) over N/10 deployment
// repositories served over smart HTTP (STORE=oci: prefixes of an OCI
// registry), from nothing to all Ready, then
// bumps their upstream revision until every draft is updated. It reports
// both times, CPU per process (the controllers, their git server, the API
// server, etcd) and steal, the peak heap of the process running the
// controllers, and the API requests the manager made per variant, by
// verb and resource, as one table.
func BenchmarkPackageVariants(b *testing.B) {
	ctx := context.Background()
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("SCION_BENCH_VARIANTS")); err == nil && v >= 10 {
		n = v
	}
	const perRepo = 10
	repos := n / perRepo
	// SCION_BENCH_SET=1: the variants are made by one PackageVariantSet
	// selecting the repositories (10 targets of one package each), and
	// the set's summary must count them all Ready.
	asSet := os.Getenv("SCION_BENCH_SET") != ""
	// SCION_BENCH_INTERACTIVE=1: people edit 50 variants of their own and
	// approve 50 drafts at random moments of the bump (through the set:
	// the set's rewrite of its variants is the bulk work their changes
	// must not queue behind).
	interactive := os.Getenv("SCION_BENCH_INTERACTIVE") != ""
	asSet = asSet || interactive
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ns := env.Namespace(b, "scale")
		create := func(obj client.Object) {
			if err := k8sClient.Create(ctx, obj); err != nil {
				b.Fatal(err)
			}
		}
		create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "useast1-settings", Namespace: ns}, Data: map[string]string{"color": "green"}})
		if benchRegistry != nil {
			ociRepositories(b, ns, repos, create)
		} else {
			gitRepositories(b, ns, repos, create)
		}
		pvs := variantwatch.Start(b, env.Config, env.Scheme, ns)
		var peak atomic.Uint64
		peakProfile := ""
		if prefix := os.Getenv("SCION_BENCH_PROFILE"); prefix != "" {
			peakProfile = prefix + "-peak-heap.pprof"
		}
		stop := testenv.SampleHeapProfiling(&peak, peakProfile)
		requestsBefore := suite.Requests.Total()
		suite.Requests.ResetKinds()
		registryLog := registryRequests(b, registryCount{})
		cpuBefore := cpustat.Read()
		pushesBefore, countersBefore := pushCounts(), counterValues()
		b.StartTimer()

		endProfile := profilePhase(b, "create")
		start := time.Now()
		var wg sync.WaitGroup
		sem := make(chan struct{}, 16)
		if asSet {
			createSet(b, ns, perRepo)
		}
		for r := 0; r < repos && !asSet; r++ {
			for t := 0; t < perRepo; t++ {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer func() { <-sem; wg.Done() }()
					pv := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cluster-%04d-tenant-%d", r, t), Namespace: ns},
						Spec: configv1alpha1.PackageVariantSpec{
							Upstream:       &configv1alpha1.Upstream{Repo: "catalog", Package: "app", Revision: "1"},
							Downstream:     &configv1alpha1.Downstream{Repo: fmt.Sprintf("cluster-%04d", r), Package: fmt.Sprintf("tenant-%d", t)},
							PackageContext: &configv1alpha1.PackageContext{Data: map[string]string{"tenant": fmt.Sprint(t)}},
							Pipeline:       &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{{Image: "set-namespace", ConfigMap: map[string]string{"namespace": fmt.Sprintf("tenant-%d", t)}}}},
							Injectors:      []configv1alpha1.InjectionSelector{{Name: "useast1-settings"}},
						}}
					if err := k8sClient.Create(ctx, pv); err != nil {
						b.Error(err)
					}
				}()
			}
		}
		wg.Wait()
		pvs.Wait(b, repos*perRepo, nil)
		if asSet {
			waitSetSummary(b, ns, repos*perRepo, "1")
		}
		createTime := time.Since(start)
		createRequests := suite.Requests.Total() - requestsBefore
		createCPU := cpustat.Read().Sub(cpuBefore)
		createKinds := suite.Requests.Kinds()
		createRegistry := registryRequests(b, registryLog)
		createPushes := pushSummary(pushesBefore)
		createCounters := counterSummary(countersBefore, n)
		endProfile()
		var person *people
		if interactive {
			person = newPeople(b, ns, repos, pvs)
		}
		requestsBefore, cpuBefore, pushesBefore, countersBefore = suite.Requests.Total(), cpustat.Read(), pushCounts(), counterValues()
		registryLog = registryRequests(b, createRegistry)

		// Bump every variant to revision 2 (through the set's upstream,
		// with a set).
		endProfile = profilePhase(b, "bump")
		start = time.Now()
		list := &configv1alpha1.PackageVariantList{}
		if err := k8sClient.List(ctx, list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		if asSet {
			set := &configv1alpha2.PackageVariantSet{}
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: benchSet}, set); err != nil {
				b.Fatal(err)
			}
			patch := client.MergeFrom(set.DeepCopy())
			set.Spec.Upstream.Revision = "2"
			if err := k8sClient.Patch(ctx, set, patch); err != nil {
				b.Fatal(err)
			}
			list.Items = nil
		}
		bumped := make(chan struct{})
		if person != nil {
			person.start(b, createTime*9/10, bumped)
		}
		for i := range list.Items {
			pv := &list.Items[i]
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				patch := client.MergeFrom(pv.DeepCopy())
				pv.Spec.Upstream.Revision = "2"
				if err := k8sClient.Patch(ctx, pv, patch); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		pvs.Wait(b, repos*perRepo, func(pv *configv1alpha1.PackageVariant) bool { return pv.Spec.Upstream.Revision == "2" })
		if asSet {
			waitSetSummary(b, ns, repos*perRepo, "2")
		}
		updateTime := time.Since(start)
		close(bumped)
		updateRequests := suite.Requests.Total() - requestsBefore
		updateCPU := cpustat.Read().Sub(cpuBefore)
		updateKinds := suite.Requests.Kinds()
		updateRegistry := registryRequests(b, registryLog)
		updateCounters := counterSummary(countersBefore, n)
		endProfile()
		stop()
		if person != nil {
			fmt.Print(person.report())
		}
		fmt.Print(apiLatency(b, ns))
		fmt.Print(consolePages(b, ns))
		fmt.Print(batchLifecycle(b, ns))
		// Printed, not logged: a benchmark's log is cut after a few lines.
		fmt.Print(scaleTable(n, repos, [2]time.Duration{createTime, updateTime}, [2]cpustat.CPU{createCPU, updateCPU},
			[2]int64{createRequests, updateRequests}, [2]map[string]int64{createKinds, subtract(updateKinds, createKinds)},
			[2]string{createPushes, pushSummary(pushesBefore)}, [2][]string{createCounters, updateCounters}, [2]map[string]int64{createRegistry.kinds, updateRegistry.kinds}, peak.Load()))
		b.ReportMetric(createTime.Seconds(), "create-all-ready-s")
		b.ReportMetric(updateTime.Seconds(), "update-all-ready-s")
		b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(testenv.PeakResident())/(1<<20), "peak-rss-MiB")
		b.ReportMetric(float64(createRequests)/float64(repos*perRepo), "create-requests/pv")
		b.ReportMetric(float64(updateRequests)/float64(repos*perRepo), "update-requests/pv")
		// Where the two cores went while creating: the process running
		// the controllers, its git subprocesses, the API server and etcd.
		b.ReportMetric(createCPU.Self.Seconds(), "create-cpu-manager-s")
		b.ReportMetric(createCPU.Children.Seconds(), "create-cpu-git-s")
		b.ReportMetric(createCPU.APIServer.Seconds(), "create-cpu-apiserver-s")
		b.ReportMetric(createCPU.Etcd.Seconds(), "create-cpu-etcd-s")
		b.ReportMetric(createCPU.Steal.Seconds(), "create-steal-s")
	}
}

// gitRepositories makes the scenario's repositories in git: the catalog
// (app v1 and v2 published) a bare repository on disk, the clusters
// served by a smart-HTTP server.
func gitRepositories(b *testing.B, ns string, repos int, create func(client.Object)) {
	root := b.TempDir()
	server := gitserver.NewServer(b, root)
	catalog := gitserver.InitBare(b, root, "catalog.git")
	publish(b, catalog, "v1", benchApp(1))
	publish(b, catalog, "v2", benchApp(2))
	create(&configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "catalog", Namespace: ns}, Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "file://" + catalog}}})
	for r := 0; r < repos; r++ {
		name := fmt.Sprintf("cluster-%04d", r)
		gitserver.InitBare(b, root, name+".git")
		create(&configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"bench": "scale"}},
			Spec: configv1alpha1.RepositorySpec{Deployment: true, Git: &configv1alpha1.GitRepository{Repo: server.URLFor(name + ".git"), CreateBranch: true}}})
	}
}

// ociRepositories makes them in the registry of STORE=oci: the catalog
// and each cluster a prefix of their own, with a dockerconfigjson Secret
// when the registry asks for a password (OCI_AUTH=htpasswd or tokens).
func ociRepositories(b *testing.B, ns string, repos int, create func(client.Object)) {
	ctx := context.Background()
	reg := benchRegistry
	prefix := reg.Host + "/" + ns
	var secret *configv1alpha1.SecretRef
	if reg.Username != "" {
		b.Setenv("DOCKER_CONFIG", reg.DockerConfig(b, reg.Password))
		create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred", Namespace: ns}, Type: corev1.SecretTypeDockerConfigJson,
			Data: map[string][]byte{corev1.DockerConfigJsonKey: reg.DockerConfigJSON(reg.Password)}})
		secret = &configv1alpha1.SecretRef{Name: "regcred"}
	}
	var opts oci.Options
	if reg.Transport != nil {
		opts.Transport = reg.Transport
	}
	st, err := oci.OpenStore(ctx, oci.StoreOptions{Prefix: prefix + "/catalog", Options: opts})
	if err != nil {
		b.Fatal(err)
	}
	for i, ws := range []string{"v1", "v2"} {
		if _, err := (&pkgservice.Service{}).PublishDirect(ctx, st, "app", ws, benchApp(i+1), "release "+ws, "author"); err != nil {
			b.Fatal(err)
		}
	}
	at := func(p string) *configv1alpha1.OCIRepository {
		return &configv1alpha1.OCIRepository{Registry: prefix + "/" + p, SecretRef: secret}
	}
	create(&configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "catalog", Namespace: ns}, Spec: configv1alpha1.RepositorySpec{Type: configv1alpha1.OCIRepositoryType, OCI: at("catalog")}})
	for r := 0; r < repos; r++ {
		name := fmt.Sprintf("cluster-%04d", r)
		create(&configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"bench": "scale"}},
			Spec: configv1alpha1.RepositorySpec{Type: configv1alpha1.OCIRepositoryType, Deployment: true, OCI: at(name)}})
	}
}

// quietBeforeHeapProfile is how long the heap profile of a phase waits
// for the controllers to finish what the phase left them (status writes,
// lock recounts, syncs).
const quietBeforeHeapProfile = 20 * time.Second

// profilePhase writes a CPU profile of one phase of the scenario to
// $SCION_BENCH_PROFILE-<phase>.pprof when that is set (`make bench-scale
// PROFILE=/tmp/scale`), for `go tool pprof`, and the heap in use at its
// end to $SCION_BENCH_PROFILE-<phase>-heap.pprof; it returns what ends
// it.
func profilePhase(b *testing.B, phase string) func() {
	prefix := os.Getenv("SCION_BENCH_PROFILE")
	if prefix == "" {
		return func() {}
	}
	f, err := os.Create(prefix + "-" + phase + ".pprof")
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	apiServer := profileAPIServer(b, prefix+"-"+phase+"-apiserver.pprof")
	return func() {
		apiServer()
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Error(err)
		}
		h, err := os.Create(prefix + "-" + phase + "-heap.pprof")
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		// The heap in use once the controllers are quiet: while they
		// work, collections run back to back and the profile shows the
		// garbage of the last cycle as in use.
		time.Sleep(quietBeforeHeapProfile)
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.Logf("%s: heap in use after it, the controllers quiet: %d MiB", phase, ms.HeapAlloc>>20)
		if err := pprof.WriteHeapProfile(h); err != nil {
			b.Error(err)
		}
	}
}

// apiServerProfileSeconds is how long the kube-apiserver's CPU profile of
// a phase runs, from the phase's start (its pprof handler profiles for a
// fixed time): long enough to cover the bulk of a phase at 1,000
// variants, a sample of one at 10,000.
const apiServerProfileSeconds = 40

// profileAPIServer writes the kube-apiserver's CPU profile of the first
// apiServerProfileSeconds of a phase to path (its /debug/pprof handler,
// as the test environment's administrator): where the API server's CPU
// goes while Scion works. It returns what waits for it.
func profileAPIServer(b *testing.B, path string) func() {
	hc, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := hc.Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimSuffix(env.Config.Host, "/"), apiServerProfileSeconds))
		if err != nil {
			b.Error(err)
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Errorf("kube-apiserver profile: %v %s", err, resp.Status)
			return
		}
		if err := os.WriteFile(path, body, 0o644); err != nil {
			b.Error(err)
		}
	}()
	return func() { <-done }
}

func subtract(a, b map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range a {
		if d := v - b[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// scaleTable renders the figures of both phases as one table.
func scaleTable(n, repos int, wall [2]time.Duration, cpu [2]cpustat.CPU, requests [2]int64, kinds [2]map[string]int64, pushes [2]string, counters [2][]string, registryKinds [2]map[string]int64, peak uint64) string {
	var sb strings.Builder
	tw := tabwriter.NewWriter(&sb, 0, 4, 2, ' ', tabwriter.AlignRight)
	where := "git over smart HTTP"
	if benchRegistry != nil {
		where = benchRegistryKind
	}
	limit := ""
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		limit = fmt.Sprintf(" (Go memory limit %.0f MiB, GOMEMLIMIT)", float64(l)/(1<<20))
	}
	apiServer := "Scion's API server in the same process"
	if pid := env.APIServerPid(); pid != 0 {
		apiServer = fmt.Sprintf("Scion's API server in a process of its own (peak resident memory %.0f MiB)", float64(testenv.PeakResidentOf(strconv.Itoa(pid)))/(1<<20))
	}
	fmt.Fprintf(&sb, "\n%d PackageVariants over %d repositories (%s), peak heap of the controllers' process %.0f MiB%s, its peak resident memory %.0f MiB; %s\n",
		n, repos, where, float64(peak)/(1<<20), limit, float64(testenv.PeakResident())/(1<<20), apiServer)
	fmt.Fprintln(tw, "\tcreate\tupstream bump\t")
	row := func(name string, f func(i int) string) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", name, f(0), f(1))
	}
	row("wall time (all Ready)", func(i int) string { return wall[i].Round(100 * time.Millisecond).String() })
	row("CPU controllers", func(i int) string { return cpu[i].Self.Round(100 * time.Millisecond).String() })
	// The runtime's GC figures are its workers' wall time on a processor
	// (P), not CPU time: on a saturated machine a worker waiting for a
	// core still counts. The real share is in the PROFILE= CPU profile.
	row("  GC, Go runtime's estimate (idle marking)", func(i int) string {
		return fmt.Sprintf("%s (%s)", cpu[i].GC.Round(100*time.Millisecond), cpu[i].GCIdle.Round(100*time.Millisecond))
	})
	row("CPU git server", func(i int) string { return cpu[i].Children.Round(100 * time.Millisecond).String() })
	row("CPU OCI registry", func(i int) string { return cpu[i].Registry.Round(100 * time.Millisecond).String() })
	if env.APIServerPid() != 0 {
		row("CPU Scion's API server", func(i int) string { return cpu[i].ScionAPI.Round(100 * time.Millisecond).String() })
	}
	row("CPU kube-apiserver", func(i int) string { return cpu[i].APIServer.Round(100 * time.Millisecond).String() })
	row("CPU etcd", func(i int) string { return cpu[i].Etcd.Round(100 * time.Millisecond).String() })
	row("steal", func(i int) string { return cpu[i].Steal.Round(100 * time.Millisecond).String() })
	row("git pushes", func(i int) string { return pushes[i] })
	row("git object cache", func(i int) string { return counters[i][0] })
	row("variant productions (per variant)", func(i int) string { return counters[i][1] })
	row("API requests per variant", func(i int) string { return fmt.Sprintf("%.2f", float64(requests[i])/float64(n)) })
	perVariant := func(kinds [2]map[string]int64) {
		names := map[string]bool{}
		for i := range kinds {
			for k := range kinds[i] {
				names[k] = true
			}
		}
		for _, k := range slices.Sorted(maps.Keys(names)) {
			row("  "+k, func(i int) string { return fmt.Sprintf("%.2f", float64(kinds[i][k])/float64(n)) })
		}
	}
	perVariant(kinds)
	if benchRegistry != nil {
		row("registry requests per variant", func(i int) string {
			var total int64
			for _, v := range registryKinds[i] {
				total += v
			}
			return fmt.Sprintf("%.2f", float64(total)/float64(n))
		})
		perVariant(registryKinds)
	}
	_ = tw.Flush()
	return sb.String()
}

// registryCount is what registryRequests counted: the requests to the
// registry of STORE=oci by kind, and where its log ended.
type registryCount struct {
	kinds map[string]int64
	end   int64
}

// registryRequests counts the requests to the registry of STORE=oci
// since from (a registryCount's end), by kind (registry.Kind, a tag by
// its class: "HEAD manifests:draft.*"); nothing without one.
func registryRequests(b *testing.B, from registryCount) registryCount {
	if benchRegistry == nil {
		return registryCount{}
	}
	kinds, end, err := benchRegistry.Requests(from.end, tagClass)
	if err != nil {
		b.Fatal(err)
	}
	return registryCount{kinds: kinds, end: end}
}

// tagClass is a tag's class: "draft.*" for draft.WORKSPACE, "v*" for vN,
// the tag itself otherwise (latest).
func tagClass(tag string) string {
	if prefix, _, ok := strings.Cut(tag, "."); ok {
		return prefix + ".*"
	}
	if n, ok := strings.CutPrefix(tag, "v"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
		return "v*"
	}
	return tag
}

// pushCounts reads the manager's scion_git_push_updates histogram: how
// many pushes it made and how many ref updates they carried.
func pushCounts() [2]float64 {
	m := &dto.Metric{}
	if err := metrics.GitPushUpdates.Write(m); err != nil {
		return [2]float64{}
	}
	h := m.GetHistogram()
	return [2]float64{float64(h.GetSampleCount()), h.GetSampleSum()}
}

// counterValues reads the manager's counters and gauges, by name and, for
// labelled series, label values:
// "scion_packagevariant_productions_total{reused}".
func counterValues() map[string]float64 {
	out := map[string]float64{}
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		return out
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if m.GetCounter() == nil && m.GetGauge() == nil {
				continue
			}
			name := f.GetName()
			if len(m.GetLabel()) > 0 {
				var vs []string
				for _, l := range m.GetLabel() {
					vs = append(vs, l.GetValue())
				}
				name += "{" + strings.Join(vs, ",") + "}"
			}
			out[name] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return out
}

// counterSummary says, since before, how often the git object cache had
// what was asked, and how the n variants came by their packages.
func counterSummary(before map[string]float64, n int) []string {
	now := counterValues()
	delta := func(name string) float64 { return now[name] - before[name] }
	hits, misses := delta("scion_git_object_cache_hits_total"), delta("scion_git_object_cache_misses_total")
	cache := "no lookups"
	if hits+misses > 0 {
		cache = fmt.Sprintf("%.0f%% of %.0f lookups hit (bound %.0f MiB)", 100*hits/(hits+misses), hits+misses, now["scion_git_object_cache_max_bytes"]/(1<<20))
	}
	prod := fmt.Sprintf("%.2f produced, %.2f reused", delta("scion_packagevariant_productions_total{produced}")/float64(n), delta("scion_packagevariant_productions_total{reused}")/float64(n))
	return []string{cache, prod}
}

// pushSummary says how many pushes the manager made since before, and how
// many ref updates they carried.
func pushSummary(before [2]float64) string {
	now := pushCounts()
	return fmt.Sprintf("%.0f pushes carried %.0f ref updates", now[0]-before[0], now[1]-before[1])
}

// benchSet is the set of the set mode.
const benchSet = "fleet"

// createSet makes the set of the set mode: every deployment Repository
// (label bench: scale), perRepo packages in each, the same package context,
// pipeline and injector as the variants of the variant mode.
func createSet(b *testing.B, ns string, perRepo int) {
	set := &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Name: benchSet, Namespace: ns}, Spec: configv1alpha2.PackageVariantSetSpec{
		Upstream: &configv1alpha1.Upstream{Repo: "catalog", Package: "app", Revision: "1"}}}
	for t := 0; t < perRepo; t++ {
		pkgName := fmt.Sprintf("tenant-%d", t)
		set.Spec.Targets = append(set.Spec.Targets, configv1alpha2.Target{
			RepositorySelector: &configv1alpha2.RepositorySelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"bench": "scale"}}},
			Template: &configv1alpha2.PackageVariantTemplate{
				Downstream:     &configv1alpha2.DownstreamTemplate{Package: &pkgName},
				PackageContext: &configv1alpha2.PackageContextTemplate{Data: map[string]string{"tenant": fmt.Sprint(t)}},
				Pipeline:       &configv1alpha2.PipelineTemplate{Mutators: []configv1alpha2.FunctionTemplate{{Function: kptfilev1.Function{Image: "set-namespace", ConfigMap: map[string]string{"namespace": pkgName}}}}},
				Injectors:      []configv1alpha2.InjectionSelectorTemplate{{Name: ptrTo("useast1-settings")}},
			},
		})
	}
	if err := k8sClient.Create(context.Background(), set); err != nil {
		b.Fatal(err)
	}
}

func ptrTo(s string) *string { return &s }

// waitSetSummary waits until the set's summary counts n variants Ready
// on the upstream revision.
func waitSetSummary(b *testing.B, ns string, n int, revision string) {
	deadline := time.Now().Add(20 * time.Minute)
	for {
		set := &configv1alpha2.PackageVariantSet{}
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: benchSet}, set); err != nil {
			b.Fatal(err)
		}
		if sm := set.Status.Summary; sm != nil && sm.Ready == n && string(set.Spec.Upstream.Revision) == revision && set.Status.ObservedGeneration == set.Generation {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the set's summary is %+v after 20 minutes", set.Status.Summary)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// batchLifecycle measures what a reviewer waits for to propose, then
// approve, many of the fleet's drafts with scion rpkg (rpkg.Batch, as its
// verbs do: all at once, waiting together): 100 drafts, then 1,000 more
// (or as many as are left).
func batchLifecycle(b *testing.B, ns string) string {
	ctx := context.Background()
	list := &porchv1alpha1.PackageRevisionList{}
	if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	var drafts []string
	for _, pr := range list.Items {
		if pr.Spec.Repository != "catalog" && pr.GitLifecycle() == porchv1alpha1.LifecycleDraft {
			drafts = append(drafts, pr.Name)
		}
	}
	slices.Sort(drafts)
	rc := &rpkg.Client{Client: env.Client, Namespace: ns, Timeout: 20 * time.Minute}
	timed := func(names []string, fn func(context.Context, string) (*porchv1alpha1.PackageRevision, error)) time.Duration {
		start := time.Now()
		for _, r := range rpkg.Batch(ctx, names, fn) {
			if r.Err != nil {
				b.Fatalf("%s: %v", r.Name, r.Err)
			}
		}
		return time.Since(start)
	}
	var out strings.Builder
	out.WriteString("\nscion rpkg propose, then approve, of N drafts (all at once, waiting together)\n")
	for _, size := range []int{100, 1000} {
		names := drafts[:min(size, len(drafts))]
		drafts = drafts[len(names):]
		if len(names) == 0 {
			break
		}
		propose := timed(names, rc.Propose)
		approve := timed(names, rc.Approve)
		fmt.Fprintf(&out, "%5d drafts: propose %8s, approve %8s\n", len(names), propose.Round(100*time.Millisecond), approve.Round(100*time.Millisecond))
	}
	return out.String()
}

// consolePages measures scion console's pages with the fleet in place
// (served in process, acting as the benchmark's user): the first load
// (for the pages reading the console's view of the revisions, the list
// that fills it) and p50/p99 of the loads after it, and each page's size.
func consolePages(b *testing.B, ns string) string {
	ctx := context.Background()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	s, err := console.New(console.Options{Client: c, Namespace: ns})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s)
	defer srv.Close()
	var out strings.Builder
	out.WriteString("\nscion console's pages                                       first     p50       p99       size\n")
	for _, page := range []struct {
		path  string
		calls int
	}{
		{"/", 20},
		{"/targets", 20},
		{"/targets?package=tenant-3&page=5", 20},
		{"/proposals?lifecycle=Draft", 5},
		{"/locks", 20},
	} {
		took := make([]time.Duration, 0, page.calls)
		var size int
		for i := range page.calls + 1 {
			start := time.Now()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+page.path, nil)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatalf("%s: %v", page.path, err)
			}
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			if err != nil || res.StatusCode != http.StatusOK || bytes.Contains(body, []byte(`class="error"`)) {
				b.Fatalf("%s: %d %v: %.2000s", page.path, res.StatusCode, err, body)
			}
			if i == 0 {
				size = len(body)
			}
			took = append(took, time.Since(start))
		}
		first, rest := took[0], took[1:]
		slices.Sort(rest)
		fmt.Fprintf(&out, "%-58s %8s %8s %8s %7d kB\n", page.path, first.Round(time.Millisecond), rest[len(rest)/2].Round(time.Millisecond),
			rest[len(rest)*99/100].Round(time.Millisecond), size>>10)
	}
	return out.String()
}

// apiLatency measures what people wait for through Porch's API (Scion's
// API server behind the control plane's APIService) with the fleet in
// place: p50 and p99 of 100 calls each (20 for scion tree).
func apiLatency(b *testing.B, ns string) string {
	ctx := context.Background()
	list := &porchv1alpha1.PackageRevisionList{}
	if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	var one porchv1alpha1.PackageRevision
	for _, pr := range list.Items {
		if pr.Spec.Repository != "catalog" {
			one = pr
			break
		}
	}
	calls := porchcalls.Standard(b, env.Client, env.Config, env.Scheme, ns, len(list.Items), &one, true)
	if set := (&configv1alpha2.PackageVariantSet{}); env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: benchSet}, set) == nil && set.Status.Summary != nil {
		for _, all := range []bool{false, true} {
			name := fmt.Sprintf("scion tree pvs/%s (%d variants)", benchSet, set.Status.Summary.Desired)
			if all {
				name += " --all"
			}
			calls = append(calls, porchcalls.Call{Name: name, Calls: 20, Call: func() error {
				n, err := tree.Build(ctx, env.Client, ns, "pvs", benchSet, tree.Options{All: all})
				if err == nil {
					err = tree.Print(io.Discard, n, false)
				}
				return err
			}})
		}
	}
	return porchcalls.Measure(b, calls)
}
