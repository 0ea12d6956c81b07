// Package metrics defines Scion's Prometheus metrics, registered with
// controller-runtime's registry (served by the manager next to its own
// reconcile counts and durations).
package metrics

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// GitOperationDuration times git operations by kind (open, fetch,
	// list, read, write).
	GitOperationDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "scion_git_operation_duration_seconds",
		Help:    "Duration of git operations, by operation.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, []string{"operation"})
	// GitOperationErrors counts failed git operations by kind.
	GitOperationErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scion_git_operation_errors_total",
		Help: "Failed git operations, by operation.",
	}, []string{"operation"})
	// GitPushUpdates counts the ref updates each push carries: draft
	// writes made at the same time share one push (group commit).
	GitPushUpdates = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "scion_git_push_updates",
		Help:    "Ref updates carried by each push to a remote.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 8),
	})
	// RepositorySyncs counts repository syncs by result (changed,
	// unchanged, error).
	RepositorySyncs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scion_repository_syncs_total",
		Help: "Repository syncs, by result.",
	}, []string{"result"})
	// SetExpansions counts the expansions of each PackageVariantSet's
	// targets: one per change of the set or of what it selects, not one
	// per event of its variants (those are repaired one by one).
	SetExpansions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scion_packagevariantset_expansions_total",
		Help: "Expansions of each PackageVariantSet's targets.",
	}, []string{"namespace", "packagevariantset"})
	// VariantProductions counts how each PackageVariant reconcile came by
	// its downstream package: produced (read from git, cloned or updated,
	// mutated and rendered) or reused (nothing it is made from changed
	// since the last production that reached git, such as the reconcile
	// the variant's own write brings back).
	VariantProductions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scion_packagevariant_productions_total",
		Help: "Downstream packages of PackageVariant reconciles, by result (produced, reused).",
	}, []string{"result"})
	// UndecodableObjects counts, by kind, the objects set aside because
	// they do not decode into Scion's Go types (internal/lenient).
	UndecodableObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "scion_undecodable_objects",
		Help: "Objects Scion ignores because a field does not decode, by kind (see their Stalled condition).",
	}, []string{"kind"})
	// RolloutWaves counts each PackageRollout's waves by state.
	RolloutWaves = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "scion_rollout_waves",
		Help: "Waves of each PackageRollout, by state.",
	}, []string{"namespace", "rollout", "state"})
	// RolloutTargets counts each PackageRollout's targets by state
	// (total, published, healthy, failed, dropped, rolled_back).
	RolloutTargets = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "scion_rollout_targets",
		Help: "Targets of each PackageRollout, by state.",
	}, []string{"namespace", "rollout", "state"})
)

// GitObjectCacheFigures are what the scion_git_object_cache_* metrics
// report.
type GitObjectCacheFigures struct {
	// Bytes held, and their bound.
	Bytes, Max float64
	// Hits and Misses count lookups.
	Hits, Misses float64
}

// objectCache reports the git object cache of the running manager (see
// SetGitObjectCache).
var objectCache atomic.Pointer[func() GitObjectCacheFigures]

func gitObjectCache(pick func(GitObjectCacheFigures) float64) func() float64 {
	return func() float64 {
		f := objectCache.Load()
		if f == nil {
			return 0
		}
		return pick((*f)())
	}
}

// SetGitObjectCache makes the scion_git_object_cache_* metrics report
// figures, the manager's shared git object cache.
func SetGitObjectCache(figures func() GitObjectCacheFigures) {
	objectCache.Store(&figures)
}

func init() {
	crmetrics.Registry.MustRegister(GitOperationDuration, GitOperationErrors, GitPushUpdates, RepositorySyncs, SetExpansions, VariantProductions, RolloutWaves, RolloutTargets, UndecodableObjects,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "scion_git_object_cache_bytes",
			Help: "Bytes of git objects kept in memory, for all repositories (at most scion_git_object_cache_max_bytes).",
		}, gitObjectCache(func(f GitObjectCacheFigures) float64 { return f.Bytes })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "scion_git_object_cache_max_bytes",
			Help: "Bound of the git object cache: --git-object-cache-size, or by default a base plus a share per PackageVariant of the replica's shard.",
		}, gitObjectCache(func(f GitObjectCacheFigures) float64 { return f.Max })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "scion_git_object_cache_hits_total",
			Help: "Lookups of git objects found in memory.",
		}, gitObjectCache(func(f GitObjectCacheFigures) float64 { return f.Hits })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "scion_git_object_cache_misses_total",
			Help: "Lookups of git objects not in memory (read from the mirror on disk, or not there).",
		}, gitObjectCache(func(f GitObjectCacheFigures) float64 { return f.Misses })),
	)
}

// ObserveGit records the duration and outcome of a git operation; call it
// as defer metrics.ObserveGit("fetch", time.Now(), &err).
func ObserveGit(op string, start time.Time, err *error) {
	GitOperationDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil && *err != nil {
		GitOperationErrors.WithLabelValues(op).Inc()
	}
}
