package cli

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/fn"
	"github.com/scion-dev/scion/internal/kindwatch"
	"github.com/scion-dev/scion/internal/manager"
	"github.com/scion-dev/scion/internal/memlimit"
	"github.com/scion-dev/scion/internal/store"
)

// ControllerOptions are the options of `scion controller`.
type ControllerOptions struct {
	Streams
	Manager manager.Options
	Zap     zap.Options

	readableKinds  []string
	gitObjectCache string
	limits         limitFlags
	egress         egressFlags
	functionRunner functionRunnerFlags
}

// NewCmdController returns `scion controller`, the controller manager.
func NewCmdController(streams Streams) *cobra.Command {
	o := &ControllerOptions{Streams: streams}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the Scion controller manager against the cluster of the current kubeconfig",
		Long: `Run every Scion controller: Repositories are synced from git and their package
revisions shown as PackageRevisions. Uses the in-cluster configuration, or
the kubeconfig of --kubeconfig, $KUBECONFIG or ~/.kube/config.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Manager.MetricsAddr, "metrics-bind-address", ":8080", `address of the Prometheus metrics endpoint ("0" disables it)`)
	f.BoolVar(&o.Manager.Notifications, "notifications", true, `send what waits for people or went wrong to the webhook of each namespace's Secret scion-notifications (docs/notifications.md)`)
	f.StringVar(&o.Manager.WebhookAddr, "webhook-bind-address", "0", `address of the git push webhook receiver, /hook/<namespace>, on every replica ("0" disables it; docs/repositories.md)`)
	f.StringVar(&o.Manager.ProbeAddr, "health-probe-bind-address", ":8081", `address of /healthz and /readyz ("0" disables them)`)
	f.BoolVar(&o.Manager.LeaderElection, "leader-elect", true, "run one active replica at a time")
	f.StringVar(&o.Manager.LeaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader election lease (default: the pod's)")
	f.DurationVar(&o.Manager.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a standby waits after the leader's last renewal before taking over: the failover time when a leader dies")
	f.DurationVar(&o.Manager.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader tries to renew its lease before it stops leading (shorter than the lease duration)")
	f.DurationVar(&o.Manager.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "how often the leader renews, and standbys try to acquire, the lease")
	f.StringVar(&o.Manager.CacheDir, "cache-dir", "", "folder of the local git mirrors (default: $XDG_CACHE_HOME/scion/repositories)")
	f.IntVar(&o.Manager.RepositoryWorkers, "repository-workers", 4, "Repositories synced at once")
	f.IntVar(&o.Manager.PackageRevisionWorkers, "packagerevision-workers", 8, "PackageRevisions reconciled at once")
	f.IntVar(&o.Manager.PackageVariantWorkers, "packagevariant-workers", 8, "PackageVariants reconciled at once")
	f.IntVar(&o.Manager.PackageVariantSetWorkers, "packagevariantset-workers", 2, "PackageVariantSets reconciled at once")
	f.IntVar(&o.Manager.PackageRolloutWorkers, "packagerollout-workers", 2, "PackageRollouts reconciled at once")
	f.StringVar(&o.Manager.Shard, "shard", "", "reconcile only objects labelled config.porch.kpt.dev/shard=SHARD, a DNS label (default: only those without the label); each shard elects its own leader")
	f.DurationVar(&o.Manager.TagPollPeriod, "tag-poll-period", time.Minute, "how often variants following a floating tag check whether it moved")
	f.BoolVar(&o.Manager.AllowFileRepositories, "allow-file-repositories", false, "let Repositories use file:// URLs, paths on the controller's file system (for development; never into its own cache)")
	addFunctionImagesFlag(f, &o.Manager.FunctionImages)
	o.functionRunner.add(f)
	f.StringVar(&o.Manager.RegistryCAFile, "registry-ca-file", "", "PEM file of certificate authorities to trust, besides the system's, for the registries of Repositories of type oci")
	f.StringVar(&o.gitObjectCache, "git-object-cache-size", "auto", "memory for recently read and written git objects, for all repositories together: a quantity (256Mi, 1Gi), or auto for 32Mi plus 12Ki per PackageVariant of the shard")
	f.DurationVar(&o.Manager.GitTimeout, "git-timeout", store.DefaultTimeout, "how long one exchange with a git remote (a fetch, a push) may take before it fails")
	f.DurationVar(&o.Manager.SyncPeriod, "sync-period", configv1alpha1.DefaultSyncPeriod, "default time between syncs of a Repository (spec.sync.period overrides it)")
	f.DurationVar(&o.Manager.ClusterPoll, "cluster-poll", configv1alpha1.DefaultClusterPoll, "how often a deployment Repository's target cluster (spec.cluster) is read while something there moves (a rollout waiting on Flux, say); once all is settled, every minute")
	o.limits.add(f)
	o.egress.add(f)
	f.StringSliceVar(&o.readableKinds, "readable-kinds", []string{kindwatch.DefaultKinds.String()}, "kinds whose objects PackageVariants may inject and PackageVariantSets may select, as Kind.group (ConfigMap, Team.example.com) or *.group; Secrets only when named; the ClusterRole must let the controller get, list and watch them")
	goFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	o.Zap.BindFlags(goFlags)
	f.AddGoFlagSet(goFlags)
	// controller-runtime reads --kubeconfig from the standard flag set.
	if kf := flag.CommandLine.Lookup("kubeconfig"); kf != nil {
		f.AddGoFlag(kf)
	}
	return cmd
}

// Complete fills in defaults.
func (o *ControllerOptions) Complete() error {
	if o.Manager.CacheDir == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return fmt.Errorf("no --cache-dir and no user cache folder: %w", err)
		}
		o.Manager.CacheDir = filepath.Join(dir, "scion", "repositories")
	}
	if o.Manager.SyncPeriod < time.Second {
		return fmt.Errorf("--sync-period must be at least 1s")
	}
	if o.Manager.ClusterPoll < time.Second {
		return fmt.Errorf("--cluster-poll must be at least 1s")
	}
	o.Manager.GitObjectCacheSize = 0 // auto: the manager sizes it by the fleet
	if o.gitObjectCache != "auto" {
		// A bare number is bytes: "64" meant as MiB would hold next to
		// nothing, so less than a MiB is refused rather than taken.
		size, err := resource.ParseQuantity(o.gitObjectCache)
		if err != nil || size.Value() < 1<<20 {
			return fmt.Errorf("--git-object-cache-size %q: want auto or a quantity of at least 1Mi, such as 256Mi (a bare number is bytes)", o.gitObjectCache)
		}
		o.Manager.GitObjectCacheSize = size.Value()
	}
	if err := o.limits.complete(&o.Manager.Limits); err != nil {
		return err
	}
	policy, err := o.egress.complete()
	if err != nil {
		return err
	}
	o.Manager.Egress = policy
	if err := fn.ValidateImagePatterns(o.Manager.FunctionImages); err != nil {
		return err
	}
	if err := o.functionRunner.complete(); err != nil {
		return err
	}
	kinds, err := kindwatch.ParseKinds(o.readableKinds)
	if err != nil {
		return fmt.Errorf("--readable-kinds: %w", err)
	}
	o.Manager.ReadableKinds = kinds
	return nil
}

// Run runs the manager until SIGTERM or SIGINT.
func (o *ControllerOptions) Run() error {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.Zap), zap.WriteTo(o.ErrOut)))
	setMemoryLimit(ctrl.Log)
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("finding the cluster: %w", err)
	}
	ctx := ctrl.SetupSignalHandler()
	if o.Manager.FunctionRunner, err = o.functionRunner.start(ctx, cfg); err != nil {
		return err
	}
	return manager.Run(ctx, cfg, o.Manager)
}

// setMemoryLimit gives the Go runtime a soft memory limit under the
// container's (memlimit.FromContainer): the heap may otherwise grow to
// twice what is live whatever that limit is, and the process be killed at
// a peak.
func setMemoryLimit(log logr.Logger) {
	if limit, err := memlimit.FromContainer("/"); err != nil {
		log.Error(err, "not setting the Go memory limit")
	} else if limit > 0 {
		log.Info("Go memory limit set from the container's", "limit", resource.NewQuantity(limit, resource.BinarySI).String(), "share", memlimit.Share)
	}
}

// limitFlags are the flags of store.Limits, as quantities (parsed by
// complete): the controller and the API server take the same.
type limitFlags struct {
	maxFetch, maxPackage, maxFile string
	maxFiles                      int
}

// add defines the flags.
func (l *limitFlags) add(f *pflag.FlagSet) {
	f.StringVar(&l.maxFetch, "git-max-fetch-size", store.Quantity(store.DefaultLimits.FetchBytes), "the most one exchange with a git remote may send (its refs, a pack): a remote sending more is cut off, reported and left alone for a while")
	f.StringVar(&l.maxPackage, "max-package-size", store.Quantity(store.DefaultLimits.PackageBytes), "the most a package's files may add up to; a larger package is refused (LimitExceeded) before its files are read")
	f.IntVar(&l.maxFiles, "max-package-files", store.DefaultLimits.PackageFiles, "the most files a package may have")
	f.StringVar(&l.maxFile, "max-file-size", store.Quantity(store.DefaultLimits.FileBytes), "the largest a file of a package may be")
}

// addFunctionImagesFlag defines --function-images, which a server's
// Complete checks with fn.ValidateImagePatterns.
func addFunctionImagesFlag(f *pflag.FlagSet, into *[]string) {
	f.StringSliceVar(into, strings.TrimPrefix(fn.ImageFlag, "--"), nil, `images that packages' pipelines may run as containers, with a container runtime (docker, podman or nerdctl) on the PATH, besides the builtin functions, which always run: an image, or a prefix ending in "*" (registry.example.com/fns/*); none by default`)
}

// complete parses the flags into limits.
func (l *limitFlags) complete(into *store.Limits) error {
	for _, q := range []struct {
		flag, value string
		into        *int64
	}{
		{"git-max-fetch-size", l.maxFetch, &into.FetchBytes},
		{"max-package-size", l.maxPackage, &into.PackageBytes},
		{"max-file-size", l.maxFile, &into.FileBytes},
	} {
		v, err := resource.ParseQuantity(q.value)
		if err != nil || v.Value() < 1<<10 {
			return fmt.Errorf("--%s %q: want a quantity of at least 1Ki, such as 64Mi (a bare number is bytes)", q.flag, q.value)
		}
		*q.into = v.Value()
	}
	if l.maxFiles < 1 {
		return fmt.Errorf("--max-package-files %d: want at least 1", l.maxFiles)
	}
	into.PackageFiles = l.maxFiles
	return nil
}
