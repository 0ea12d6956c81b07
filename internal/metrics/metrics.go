// Package metrics defines Scion's Prometheus metrics, registered with
// controller-runtime's registry (served by the manager next to its own
// reconcile counts and durations).
package metrics

import (
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

func init() {
	crmetrics.Registry.MustRegister(GitOperationDuration, GitOperationErrors, GitPushUpdates, RepositorySyncs, SetExpansions, RolloutWaves, RolloutTargets)
}

// ObserveGit records the duration and outcome of a git operation; call it
// as defer metrics.ObserveGit("fetch", time.Now(), &err).
func ObserveGit(op string, start time.Time, err *error) {
	GitOperationDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil && *err != nil {
		GitOperationErrors.WithLabelValues(op).Inc()
	}
}
