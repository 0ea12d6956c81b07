package manager

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
	"github.com/scion-dev/scion/internal/testutil/scionbin"
	"github.com/scion-dev/scion/internal/testutil/syncbuf"
	"github.com/scion-dev/scion/internal/testutil/testenv"
	"github.com/scion-dev/scion/internal/testutil/variantwatch"
)

// replica is one `scion controller` process.
type replica struct {
	shard string
	cmd   *exec.Cmd
	log   *syncbuf.Buffer
}

// leads says whether the replica holds its shard's lease (its log says
// it acquired it).
func (r *replica) leads() bool {
	return strings.Contains(r.log.String(), "Successfully acquired lease")
}

// BenchmarkFailover (`make bench-failover N=... SHARDS=1|3`) runs two
// `scion controller` replicas per shard with leader election, N
// PackageVariants made by one PackageVariantSet per shard over N/10
// repositories served over smart HTTP; once all are Ready it bumps the
// sets' upstream and, a third of the way through, kills (SIGKILL) the
// leader of one shard. It reports the time from the kill to the standby
// holding the lease and to its first write, the bump's total, and checks
// that every variant has exactly one draft (in the cluster and in git).
func BenchmarkFailover(b *testing.B) {
	ctx := context.Background()
	// The benchmark's own watch of the variants logs nothing worth reading.
	crlog.SetLogger(logr.Discard())
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("SCION_BENCH_VARIANTS")); err == nil && v >= 30 {
		n = v
	}
	shards := []string{""}
	if os.Getenv("SCION_BENCH_SHARDS") == "3" {
		shards = []string{"", "b", "c"}
	}
	victim := shards[len(shards)-1]
	const perRepo = 10
	reposPerShard := n / perRepo / len(shards)
	for range b.N {
		b.StopTimer()
		env := startEnv(b)
		bin := scionbin.Build(b)
		kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
		if err := env.WriteKubeconfig(kubeconfig, "replica"); err != nil {
			b.Fatal(err)
		}
		ns := env.Namespace(b, "failover")
		root := b.TempDir()
		server := gitserver.NewServer(b, root)
		catalog := gitserver.InitBare(b, root, "catalog.git")
		gitserver.SeedRevisions(b, catalog, 1, 2, 20) // pkg-0000 v1 and v2
		create := func(obj client.Object) {
			if err := env.Storage.Create(ctx, obj); err != nil {
				b.Fatal(err)
			}
		}
		create(&configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "catalog", Namespace: ns},
			Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "file://" + catalog}}})
		var downstreams []string
		for _, shard := range shards {
			labels := map[string]string{"bench": "failover" + shard}
			if shard != "" {
				labels[configv1alpha1.ShardLabel] = shard
			}
			for r := range reposPerShard {
				name := fmt.Sprintf("cluster-%s%04d", shard, r)
				gitserver.InitBare(b, root, name+".git")
				downstreams = append(downstreams, name)
				create(&configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
					Spec: configv1alpha1.RepositorySpec{Deployment: true, Git: &configv1alpha1.GitRepository{Repo: server.URLFor(name + ".git"), CreateBranch: true}}})
			}
			set := &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{Name: "fleet" + shard, Namespace: ns},
				Spec: configv1alpha2.PackageVariantSetSpec{Upstream: &configv1alpha1.Upstream{Repo: "catalog", Package: "pkg-0000", Revision: "1"}}}
			if shard != "" {
				set.Labels = map[string]string{configv1alpha1.ShardLabel: shard}
			}
			for t := range perRepo {
				pkgName := fmt.Sprintf("tenant-%d", t)
				set.Spec.Targets = append(set.Spec.Targets, configv1alpha2.Target{
					RepositorySelector: &configv1alpha2.RepositorySelector{LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"bench": "failover" + shard}}},
					Template:           &configv1alpha2.PackageVariantTemplate{Downstream: &configv1alpha2.DownstreamTemplate{Package: &pkgName}},
				})
			}
			create(set)
		}
		total := reposPerShard * perRepo * len(shards)
		pvs := variantwatch.Start(b, env.Config, env.Scheme, ns)

		var replicas []*replica
		for _, shard := range shards {
			for range 2 {
				args := []string{"controller", "--kubeconfig", kubeconfig, "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
					"--cache-dir", b.TempDir(), "--allow-file-repositories", "--leader-election-namespace", ns, "--zap-log-level", "info"}
				if shard != "" {
					args = append(args, "--shard", shard)
				}
				r := &replica{shard: shard, cmd: exec.Command(bin, args...), log: &syncbuf.Buffer{}}
				r.cmd.Stdout, r.cmd.Stderr = r.log, r.log
				if err := r.cmd.Start(); err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = r.cmd.Process.Kill(); _ = r.cmd.Wait() })
				replicas = append(replicas, r)
			}
		}
		start := time.Now()
		pvs.Wait(b, total, nil)
		createTime := time.Since(start)

		// Bump every set; a third of the way, kill the victim shard's
		// leader.
		start = time.Now()
		for _, shard := range shards {
			set := &configv1alpha2.PackageVariantSet{}
			if err := env.Storage.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet" + shard}, set); err != nil {
				b.Fatal(err)
			}
			patch := client.MergeFrom(set.DeepCopy())
			set.Spec.Upstream.Revision = "2"
			if err := env.Storage.Patch(ctx, set, patch); err != nil {
				b.Fatal(err)
			}
		}
		bumped := func(pv *configv1alpha1.PackageVariant) bool { return pv.Spec.Upstream.Revision == "2" }
		pvs.Wait(b, total/3, bumped)
		var leader *replica
		for _, r := range replicas {
			if r.shard == victim && r.leads() {
				leader = r
			}
		}
		if leader == nil {
			for _, r := range replicas {
				b.Logf("replica of shard %q:\n%.3000s", r.shard, r.log.String())
			}
			b.Fatalf("no replica of shard %q says it leads", victim)
		}
		lease := leaderElectionID(victim)
		held := &coordinationv1.Lease{}
		if err := env.Storage.Get(ctx, client.ObjectKey{Namespace: ns, Name: lease}, held); err != nil {
			b.Fatal(err)
		}
		oldHolder := ptr.Deref(held.Spec.HolderIdentity, "")
		var (
			mu         sync.Mutex
			killed     time.Time
			firstWrite time.Time
		)
		// The first write of the new leader: a variant of the victim's
		// shard reported Ready at the new revision after the lease moved.
		var leaseMoved time.Time
		pvs.OnUpdate(func(pv *configv1alpha1.PackageVariant) {
			mu.Lock()
			defer mu.Unlock()
			if !leaseMoved.IsZero() && firstWrite.IsZero() && pv.Labels[configv1alpha1.ShardLabel] == victim && pv.Status.ObservedGeneration == pv.Generation {
				firstWrite = time.Now()
			}
		})
		readyAtKill := pvs.Count()
		mu.Lock()
		killed = time.Now()
		mu.Unlock()
		if err := leader.cmd.Process.Kill(); err != nil {
			b.Fatal(err)
		}
		for {
			cur := &coordinationv1.Lease{}
			if err := env.Storage.Get(ctx, client.ObjectKey{Namespace: ns, Name: lease}, cur); err != nil {
				b.Fatal(err)
			}
			if h := ptr.Deref(cur.Spec.HolderIdentity, ""); h != "" && h != oldHolder {
				mu.Lock()
				leaseMoved = time.Now()
				mu.Unlock()
				break
			}
			if time.Since(killed) > 5*time.Minute {
				b.Fatalf("the lease %s is still %q's 5 minutes after its leader was killed", lease, oldHolder)
			}
			time.Sleep(50 * time.Millisecond)
		}
		pvs.Wait(b, total, bumped)
		bumpTime := time.Since(start)
		mu.Lock()
		toLease, toWrite := leaseMoved.Sub(killed), firstWrite.Sub(killed)
		mu.Unlock()

		drafts := oneDraftEach(b, env, ns, root, downstreams, total)
		var out strings.Builder
		tw := tabwriter.NewWriter(&out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(&out, "\nfailover: %d PackageVariants over %d repositories, %d shard(s) of two replicas; shard %q's leader killed (SIGKILL) with %d of %d bumped\n",
			total, len(downstreams), len(shards), victim, readyAtKill, total)
		fmt.Fprintf(tw, "create, all Ready\t%s\t\n", createTime.Round(100*time.Millisecond))
		fmt.Fprintf(tw, "kill → the standby holds the lease\t%s\t\n", toLease.Round(100*time.Millisecond))
		fmt.Fprintf(tw, "kill → the new leader's first write\t%s\t\n", toWrite.Round(100*time.Millisecond))
		fmt.Fprintf(tw, "upstream bump, all Ready (with the failover)\t%s\t\n", bumpTime.Round(100*time.Millisecond))
		fmt.Fprintf(tw, "drafts\t%s\t\n", drafts)
		_ = tw.Flush()
		fmt.Print(out.String())
		b.ReportMetric(toLease.Seconds(), "kill-to-lease-s")
		b.ReportMetric(toWrite.Seconds(), "kill-to-first-write-s")
		b.ReportMetric(bumpTime.Seconds(), "bump-all-ready-s")
	}
}

// oneDraftEach checks that every variant has exactly one draft: one
// PackageRevision in the cluster per downstream package that is not
// published, and one draft branch per package in git.
func oneDraftEach(b *testing.B, env *testenv.Env, ns, root string, repos []string, variants int) string {
	list := &porchv1alpha1.PackageRevisionList{}
	if err := env.Storage.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	perPackage := map[string]int{}
	for _, pr := range list.Items {
		if pr.Spec.Repository != "catalog" && pr.Spec.Lifecycle != porchv1alpha1.LifecyclePublished {
			perPackage[pr.Spec.Repository+"/"+pr.Spec.PackageName]++
		}
	}
	for k, c := range perPackage {
		if c != 1 {
			b.Errorf("%s has %d drafts in the cluster", k, c)
		}
	}
	if len(perPackage) != variants {
		b.Errorf("%d packages with a draft in the cluster, want %d", len(perPackage), variants)
	}
	branches := 0
	for _, repo := range repos {
		refs := strings.Fields(gitserver.Git(b, filepath.Join(root, repo+".git"), "for-each-ref", "--format=%(refname)", "refs/heads/drafts/"))
		seen := map[string]int{}
		for _, ref := range refs {
			pkg, _, _ := strings.Cut(strings.TrimPrefix(ref, "refs/heads/drafts/"), "/")
			seen[pkg]++
		}
		for pkg, c := range seen {
			if c != 1 {
				b.Errorf("%s: package %s has %d draft branches: %v", repo, pkg, c, refs)
			}
		}
		branches += len(refs)
	}
	if branches != variants {
		b.Errorf("%d draft branches in git, want %d", branches, variants)
	}
	return fmt.Sprintf("%d in the cluster, %d branches in git, one per variant", len(perPackage), branches)
}
