// Package manager assembles Scion's controller manager: every reconciler,
// the shared repository cache and package service, health probes and
// metrics.
package manager

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	crmanager "sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/compact"
	"github.com/scion-dev/scion/internal/controller/packagelock"
	"github.com/scion-dev/scion/internal/controller/packagerevision"
	"github.com/scion-dev/scion/internal/controller/packagerollout"
	"github.com/scion-dev/scion/internal/controller/packagevariant"
	"github.com/scion-dev/scion/internal/controller/packagevariantset"
	"github.com/scion-dev/scion/internal/controller/repository"
	"github.com/scion-dev/scion/internal/deployed"
	"github.com/scion-dev/scion/internal/egress"
	"github.com/scion-dev/scion/internal/fn"
	"github.com/scion-dev/scion/internal/kindwatch"
	"github.com/scion-dev/scion/internal/lenient"
	"github.com/scion-dev/scion/internal/memlimit"
	"github.com/scion-dev/scion/internal/metrics"
	"github.com/scion-dev/scion/internal/namedwatch"
	"github.com/scion-dev/scion/internal/notify"
	"github.com/scion-dev/scion/internal/oci"
	"github.com/scion-dev/scion/internal/pkgdeps"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/receiver"
	"github.com/scion-dev/scion/internal/reconciler"
	"github.com/scion-dev/scion/internal/repocache"
	"github.com/scion-dev/scion/internal/scheme"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/variant"
	"github.com/scion-dev/scion/internal/variantset"
)

// Options configure the manager.
type Options struct {
	// MetricsAddr serves Prometheus metrics ("0" disables).
	MetricsAddr string
	// ProbeAddr serves /healthz and /readyz ("0" disables).
	ProbeAddr string
	// Notifications sends, for each namespace with the Secret
	// scion-notifications, what waits for people or went wrong
	// (internal/notify).
	Notifications bool
	// WebhookAddr serves git hosts' push webhooks at /hook/<namespace>
	// (internal/receiver) on every replica, leader or not ("" or "0"
	// disables).
	WebhookAddr string
	// LeaderElection makes one replica active at a time.
	LeaderElection bool
	// LeaderElectionNamespace holds the lease (the pod's namespace when
	// empty and running in a cluster).
	LeaderElectionNamespace string
	// LeaseDuration is how long a standby waits, after the leader last
	// renewed its lease, before taking it over (the failover time of a
	// leader that died); RenewDeadline how long the leader tries to renew
	// before it gives up leading; RetryPeriod how often both try.
	// controller-runtime's 15 s, 10 s and 2 s when 0.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// CacheDir holds the local git mirrors.
	CacheDir string
	// RepositoryWorkers reconcile Repositories in parallel.
	RepositoryWorkers int
	// PackageRevisionWorkers reconcile PackageRevisions in parallel.
	PackageRevisionWorkers int
	// PackageVariantWorkers reconcile PackageVariants in parallel.
	PackageVariantWorkers int
	// PackageVariantSetWorkers reconcile PackageVariantSets in parallel.
	PackageVariantSetWorkers int
	// PackageRolloutWorkers reconcile PackageRollouts in parallel.
	PackageRolloutWorkers int
	// Shard is the share of the objects this replica reconciles: those
	// labelled config.porch.kpt.dev/shard with it, or ("") those without
	// the label. Each shard elects its own leader.
	Shard string
	// GitObjectCacheSize bounds, in bytes, the git objects kept in memory
	// for all repositories together; when 0 the bound follows the fleet,
	// ObjectCacheBase plus ObjectCachePerVariant per PackageVariant of
	// the shard.
	GitObjectCacheSize int64
	// Limits bound what a remote and its packages may make the
	// controller hold (store.DefaultLimits for fields not set).
	Limits store.Limits
	// GitTimeout bounds each exchange with a git remote (store.DefaultTimeout
	// when 0).
	GitTimeout time.Duration
	// RegistryCAFile is a PEM file of certificate authorities trusted,
	// besides the system's, by the registries of Repositories of type oci.
	RegistryCAFile string
	// Egress is the policy the remotes and registries that Repositories,
	// clones and upstreams name are checked against (repocache.Cache);
	// the cluster's Service and Pod ranges are added to its denied ones
	// at start, when they can be read. nil allows every address.
	Egress *egress.Policy
	// AnotherInProcess lets a manager run in a process that ran one
	// before (tests of a restore): controller names need not be new.
	AnotherInProcess bool
	// AllowFileRepositories lets Repositories use file:// URLs (paths on
	// the controller's file system): for development and tests.
	AllowFileRepositories bool
	// FunctionImages are the images a variant's pipeline may run as
	// containers, besides the builtin functions (fn.Runtime.ContainerImages):
	// none when empty.
	FunctionImages []string
	// FunctionRunner runs the allowed images (as Pods: podrunner) instead
	// of a container CLI on this machine, when set.
	FunctionRunner fn.ImageRunner
	// TagPollPeriod is how often variants following a floating tag check
	// whether it moved.
	TagPollPeriod time.Duration
	// SyncPeriod is the default time between repository syncs.
	SyncPeriod time.Duration
	// ClusterPoll is how often a deployment Repository's target cluster
	// (spec.cluster) is read while something of it moves
	// (configv1alpha1.DefaultClusterPoll when 0); ClusterIdle once all is
	// settled (configv1alpha1.DefaultClusterIdle when 0).
	ClusterPoll, ClusterIdle time.Duration
	// ReadableKinds are the kinds whose objects PackageVariants may inject
	// and PackageVariantSets may select (kindwatch.DefaultKinds when nil).
	// The controller's RBAC must let it get, list and watch them.
	ReadableKinds kindwatch.Kinds
}

// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list
// +kubebuilder:rbac:groups=networking.k8s.io,resources=servicecidrs,verbs=list

// stripUnread trims what no controller reads from the objects the
// manager's cache keeps: managed fields, and on the kinds there are
// thousands of (PackageVariants, PackageRevisions) the copy of the whole
// object that client-side apply keeps in an annotation (kubectl apply,
// Argo CD by default), which doubles an object's size. The objects are
// written back only by patches computed against the cached copy, which
// leave what was trimmed alone. Those kinds are compacted: their
// namespace, labels, owners, conditions and upstreams repeat in thousands
// of objects and share their bytes, and decoding's spare slice room goes
// (a quarter less heap for a PackageVariant, over a third for a
// PackageRevision: BenchmarkCachedObjects).
func stripUnread(o any) (any, error) {
	o, err := crcache.TransformStripManagedFields()(o)
	if err != nil {
		return o, err
	}
	switch obj := o.(type) {
	case *configv1alpha1.PackageVariant, *porchv1alpha1.PackageRevision:
		m := obj.(metav1.Object)
		if a := m.GetAnnotations(); a[corev1.LastAppliedConfigAnnotation] != "" {
			delete(a, corev1.LastAppliedConfigAnnotation)
			m.SetAnnotations(a)
		}
		compact.Object(obj)
	}
	return o, nil
}

// namespaceCaches makes the caches of the objects tenants have the
// controller read, one per namespace that asks, so that nothing is watched
// cluster-wide for them.
func namespaceCaches(mgr ctrl.Manager, kinds kindwatch.Kinds) *kindwatch.Caches {
	if kinds == nil {
		kinds = kindwatch.DefaultKinds
	}
	return &kindwatch.Caches{
		Kinds: kinds,
		New: func(namespace string) (crcache.Cache, error) {
			return crcache.New(mgr.GetConfig(), crcache.Options{
				Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient(),
				DefaultNamespaces: map[string]crcache.Config{namespace: {}},
				DefaultTransform:  crcache.TransformStripManagedFields(),
			})
		},
	}
}

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch

// namedReader is the reader of the few named objects the controllers read
// but must not cache whole: the credentials Secrets Repositories name
// (trimmed to the credential keys) and the CRDs injection points name.
// Each is served from a watch of that one object.
func namedReader(mgr ctrl.Manager) (*namedwatch.Reader, error) {
	c, err := client.NewWithWatch(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient()})
	if err != nil {
		return nil, fmt.Errorf("creating the watch client: %w", err)
	}
	r := &namedwatch.Reader{Client: c, Transform: func(o any) (any, error) {
		if s, ok := o.(*corev1.Secret); ok {
			repocache.TrimSecret(s)
		}
		if m, ok := o.(metav1.Object); ok {
			m.SetManagedFields(nil)
		}
		return o, nil
	}}
	return r, mgr.Add(r)
}

// LeaderElectionID names the leader election lease (of the default
// shard; a shard's lease is named after it).
const LeaderElectionID = "scion-controller.config.porch.kpt.dev"

func leaderElectionID(shard string) string {
	if shard == "" {
		return LeaderElectionID
	}
	return shard + "." + LeaderElectionID
}

// leaseTimes checks the leader election's durations against each other
// (client-go refuses them later, at leader election, with less to go on).
func leaseTimes(o Options) error {
	lease, renew, retry := cmp.Or(o.LeaseDuration, 15*time.Second), cmp.Or(o.RenewDeadline, 10*time.Second), cmp.Or(o.RetryPeriod, 2*time.Second)
	switch {
	case lease < 0 || renew < 0 || retry < 0:
		return fmt.Errorf("leader election: --leader-elect-lease-duration (%s), --leader-elect-renew-deadline (%s) and --leader-elect-retry-period (%s) must not be negative", lease, renew, retry)
	case renew >= lease:
		return fmt.Errorf("leader election: --leader-elect-renew-deadline (%s) must be shorter than --leader-elect-lease-duration (%s): a leader must give up before a standby may take over", renew, lease)
	case float64(renew) <= 1.2*float64(retry):
		return fmt.Errorf("leader election: --leader-elect-renew-deadline (%s) must be longer than 1.2 × --leader-elect-retry-period (%s)", renew, retry)
	}
	return nil
}

func durationOrNil(d time.Duration) *time.Duration {
	if d == 0 {
		return nil
	}
	return &d
}

// New builds a manager with every Scion reconciler registered.
func New(cfg *rest.Config, o Options) (ctrl.Manager, error) {
	if o.CacheDir == "" {
		return nil, errors.New("a cache directory is required")
	}
	if errs := validation.IsDNS1123Label(o.Shard); o.Shard != "" && len(errs) > 0 {
		// The shard is a label value and names the shard's lease: a name
		// that cannot be both would leave the replica idle, or fail later
		// at leader election without saying why.
		return nil, fmt.Errorf("shard %q: %s (the shard is the value of the label %s and names its leader election lease)", o.Shard, strings.Join(errs, "; "), configv1alpha1.ShardLabel)
	}
	if err := leaseTimes(o); err != nil {
		return nil, err
	}
	// An object that does not decode is set aside and reported, not
	// allowed to stop the informer of its kind (internal/lenient).
	undecodable := &lenient.Reporter{Log: ctrl.Log.WithName("undecodable")}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme.NewStorage(),
		Metrics:                 metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:  o.ProbeAddr,
		LeaderElection:          o.LeaderElection,
		LeaderElectionID:        leaderElectionID(o.Shard),
		LeaderElectionNamespace: o.LeaderElectionNamespace,
		// A replica that stops (SIGTERM: a rolling update, a drained
		// node) hands its lease over as it exits, rather than leaving the
		// standby to wait for it to expire; safe because `scion
		// controller` exits as soon as the manager stops (Run).
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 durationOrNil(o.LeaseDuration),
		RenewDeadline:                 durationOrNil(o.RenewDeadline),
		RetryPeriod:                   durationOrNil(o.RetryPeriod),
		// Nothing here reads managed fields or last-applied copies:
		// dropping them from the cache saves memory and the copy of
		// every object read.
		Cache: crcache.Options{DefaultTransform: stripUnread},
		// Controller names are unique in a process, but for a test that
		// runs a second manager after the first (a restore).
		Controller: crconfig.Controller{SkipNameValidation: &o.AnotherInProcess},
		NewCache: func(config *rest.Config, opts crcache.Options) (crcache.Cache, error) {
			informers := &lenient.Informers{Config: config, HTTPClient: opts.HTTPClient, Scheme: opts.Scheme, Mapper: opts.Mapper,
				Reporter: undecodable, Groups: []string{configv1alpha1.GroupVersion.Group, porchv1alpha1.StorageGroupVersion.Group}}
			opts.NewInformer = informers.NewInformer
			return crcache.New(config, opts)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the manager: %w", err)
	}
	shard := reconciler.Shard{Name: o.Shard}
	undecodable.Client = mgr.GetClient()
	undecodable.Recorder = eventRecorder(mgr, "scion-controller")
	undecodable.Owns = func(labels map[string]string) bool { return labels[configv1alpha1.ShardLabel] == shard.Name }
	if err := mgr.Add(undecodable); err != nil {
		return nil, err
	}
	named, err := namedReader(mgr)
	if err != nil {
		return nil, err
	}
	gitObjects := store.NewObjectCache(o.GitObjectCacheSize)
	if o.GitObjectCacheSize > 0 {
		memlimit.OffHeap(o.GitObjectCacheSize) // the cache's segments are outside the Go heap
	} else {
		if err := sizeByVariants(mgr, gitObjects, shard); err != nil {
			return nil, err
		}
	}
	metrics.SetGitObjectCache(func() metrics.GitObjectCacheFigures {
		st := gitObjects.Stats()
		return metrics.GitObjectCacheFigures{Bytes: float64(st.Bytes), Max: float64(st.Max), Hits: float64(st.Hits), Misses: float64(st.Misses)}
	})
	registryTransport, err := oci.TransportWithCA(o.RegistryCAFile)
	if err != nil {
		return nil, err
	}
	if o.Egress != nil {
		o.Egress.DenyCluster(mgr.GetAPIReader(), ctrl.Log.WithName("egress"))
	}
	cache := &repocache.Cache{Reader: named, Dir: o.CacheDir, Timeout: o.GitTimeout, Limits: o.Limits, AllowFileRepositories: o.AllowFileRepositories,
		Objects: gitObjects, OCITransport: registryTransport, Egress: o.Egress}
	// What keeps the memory of a controller with thousands of
	// repositories to those it works on.
	if err := mgr.Add(crmanager.RunnableFunc(func(ctx context.Context) error {
		wait.UntilWithContext(ctx, func(context.Context) { cache.Trim() }, repocache.TrimPeriod)
		return nil
	})); err != nil {
		return nil, err
	}
	if o.WebhookAddr != "" && o.WebhookAddr != "0" {
		hooks := &receiver.Receiver{Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Log: ctrl.Log.WithName("webhook")}
		if err := mgr.Add(everyReplica(func(ctx context.Context) error { return receiver.Server(ctx, o.WebhookAddr, hooks) })); err != nil {
			return nil, err
		}
	}
	if o.Notifications {
		if err := addNotifier(mgr, o.Egress); err != nil {
			return nil, err
		}
	}
	// One status writer for the controllers: each waits for the cache to
	// show the others' status writes too.
	status := reconciler.NewStatusWriter(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetCache())
	service := &pkgservice.Service{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Status: status}
	depsReader := pkgdeps.NewReader()
	idx := reconciler.NamespacedIndexer{Informers: mgr.GetCache()}
	if err := pkgdeps.IndexRepositories(context.Background(), idx); err != nil {
		return nil, err
	}
	if err := pkgservice.IndexRevisions(context.Background(), idx); err != nil {
		return nil, err
	}
	if err := variant.IndexVariants(context.Background(), idx); err != nil {
		return nil, err
	}
	objects := namespaceCaches(mgr, o.ReadableKinds)
	if err := mgr.Add(objects); err != nil {
		return nil, err
	}
	if err := (&repository.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Status:    status,
		Cache:     cache,
		Service:   service,
		Recorder:  eventRecorder(mgr, "scion-repository"),
		Clusters:  &deployed.Clusters{Secrets: named},
		Options:   repository.Options{SyncPeriod: o.SyncPeriod, Workers: o.RepositoryWorkers, Shard: shard, ClusterPoll: o.ClusterPoll, ClusterIdle: o.ClusterIdle},
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the repository controller: %w", err)
	}
	if err := (&packagerevision.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Cache:     cache,
		Service:   service,
		Recorder:  eventRecorder(mgr, "scion-packagerevision"),
		Deps:      depsReader,
		Options:   packagerevision.Options{Workers: o.PackageRevisionWorkers, Shard: shard},
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the packagerevision controller: %w", err)
	}
	if err := (&packagevariant.Reconciler{
		Client:      mgr.GetClient(),
		APIReader:   mgr.GetAPIReader(),
		Status:      status,
		Cache:       cache,
		Service:     service,
		Recorder:    eventRecorder(mgr, "scion-packagevariant"),
		Objects:     objects,
		Definitions: named,
		Deps:        depsReader,
		Options:     packagevariant.Options{Workers: o.PackageVariantWorkers, TagPollPeriod: o.TagPollPeriod, Shard: shard, FunctionImages: o.FunctionImages, FunctionRunner: o.FunctionRunner},
	}).SetupWithManager(context.Background(), mgr); err != nil {
		return nil, fmt.Errorf("setting up the packagevariant controller: %w", err)
	}
	if err := (&packagelock.Reconciler{
		Client:   mgr.GetClient(),
		Cache:    cache,
		Deps:     depsReader,
		Recorder: eventRecorder(mgr, "scion-packagelock"),
		Options:  packagelock.Options{Workers: o.RepositoryWorkers, Shard: shard},
	}).SetupWithManager(mgr); err != nil {
		return nil, fmt.Errorf("setting up the packagelock controller: %w", err)
	}
	evaluator, err := variantset.NewEvaluator(0)
	if err != nil {
		return nil, err
	}
	if err := (&packagevariantset.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Status:    status,
		Cache:     cache,
		Evaluator: evaluator,
		Recorder:  eventRecorder(mgr, "scion-packagevariantset"),
		Objects:   objects,
		Options:   packagevariantset.Options{Workers: o.PackageVariantSetWorkers, Shard: shard},
	}).SetupWithManager(context.Background(), mgr); err != nil {
		return nil, fmt.Errorf("setting up the packagevariantset controller: %w", err)
	}
	if err := (&packagerollout.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Status:    status,
		Cache:     cache,
		Service:   service,
		Recorder:  eventRecorder(mgr, "scion-packagerollout"),
		Objects:   objects,
		Options:   packagerollout.Options{Workers: o.PackageRolloutWorkers, Shard: shard},
	}).SetupWithManager(context.Background(), mgr); err != nil {
		return nil, fmt.Errorf("setting up the packagerollout controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("readyz", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("informer caches not synced")
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return mgr, nil
}

// Run builds the manager and runs it until ctx ends.
func Run(ctx context.Context, cfg *rest.Config, o Options) error {
	mgr, err := New(cfg, o)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// everyReplica is a runnable that runs on every replica, not only the
// leader.
type everyReplica func(ctx context.Context) error

// Start runs it.
func (f everyReplica) Start(ctx context.Context) error { return f(ctx) }

// NeedLeaderElection is false.
func (f everyReplica) NeedLeaderElection() bool { return false }

// addNotifier watches what notifications are about and sends them
// (internal/notify), to endpoints the egress policy allows.
func addNotifier(mgr ctrl.Manager, policy *egress.Policy) error {
	n := &notify.Notifier{Secrets: mgr.GetAPIReader(), Log: ctrl.Log.WithName("notify"), Elected: mgr.Elected(),
		HTTP: &http.Client{Transport: policy.Transport(http.DefaultTransport.(*http.Transport))}}
	for _, obj := range []client.Object{&porchv1alpha1.PackageRevision{}, &configv1alpha1.PackageRollout{}, &configv1alpha1.PackageVariant{}} {
		inf, err := mgr.GetCache().GetInformer(context.Background(), obj)
		if err != nil {
			return fmt.Errorf("notifications: %w", err)
		}
		if _, err := inf.AddEventHandler(n.Handler()); err != nil {
			return fmt.Errorf("notifications: %w", err)
		}
	}
	return mgr.Add(n)
}
