package packagerollout

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/metrics"
	"github.com/scion-dev/scion/internal/reconciler"
	"github.com/scion-dev/scion/internal/rollout"
)

// phaseConditions are Ready and Progressing for where the rollout is,
// and the outcome kstatus reads: a rollout publishing or soaking is
// Reconciling (in progress), one waiting for a person is not.
func phaseConditions(s *scope, o reconciler.Outcome) (ready, progressing metav1.Condition, kstatus reconciler.Outcome) {
	kstatus = o
	progressing = metav1.Condition{Type: configv1alpha1.ProgressingCondition, Status: metav1.ConditionFalse}
	d := s.decision
	switch {
	case s.started:
		ready = metav1.Condition{Status: metav1.ConditionFalse, Reason: configv1alpha1.WaveProgressingReason, Message: fmt.Sprintf("%d waves planned", len(s.waves))}
		progressing.Status, progressing.Reason, progressing.Message = metav1.ConditionTrue, configv1alpha1.WaveProgressingReason, ready.Message
	case d == nil:
		progressing.Reason = configv1alpha1.StalledReason
		if o.Err != nil {
			progressing.Reason = configv1alpha1.RetryingReason
		}
	case d.Phase == rollout.PhaseComplete:
		ready = metav1.Condition{Status: metav1.ConditionTrue, Reason: configv1alpha1.RolloutCompleteReason, Message: fmt.Sprintf("all %d waves complete", len(d.Waves))}
		if len(d.Waves) == 0 || allEmpty(d.Waves) {
			ready.Message = "nothing to roll out: no Proposed revision matched spec.revisionSelector when the rollout started"
		}
		progressing.Reason, progressing.Message = configv1alpha1.RolloutCompleteReason, ready.Message
	case d.Phase == rollout.PhaseProgressing || d.Phase == rollout.PhaseSoaking:
		reason := configv1alpha1.WaveProgressingReason
		if d.Phase == rollout.PhaseSoaking {
			reason = configv1alpha1.WaveSoakingReason
		}
		progressing.Status, progressing.Reason, progressing.Message = metav1.ConditionTrue, reason, d.Blocked
		if o.Done() {
			kstatus.Waiting = reconciler.Wait(0, reason, "%s", d.Blocked)
		}
	case d.Phase == rollout.PhaseAwaitingApproval:
		ready = metav1.Condition{Status: metav1.ConditionFalse, Reason: configv1alpha1.AwaitingApprovalReason, Message: d.Blocked}
		progressing.Reason, progressing.Message = configv1alpha1.AwaitingApprovalReason, d.Blocked
	case d.Phase == rollout.PhasePaused:
		ready = metav1.Condition{Status: metav1.ConditionFalse, Reason: configv1alpha1.PausedReason, Message: d.Blocked}
		progressing.Reason, progressing.Message = configv1alpha1.PausedReason, d.Blocked
	default: // failed or aborted: the outcome is a stall
		progressing.Reason, progressing.Message = string(d.Phase), d.Blocked
	}
	return ready, progressing, kstatus
}

// setStatus sets a rollout's status from the facts and the outcome.
func setStatus(ro *configv1alpha1.PackageRollout, s *scope, o reconciler.Outcome) {
	gen := ro.Generation
	approvedAt := map[string]*metav1.Time{}
	for _, w := range ro.Status.Waves {
		approvedAt[w.Name] = w.ApprovedAt
	}
	switch {
	case s.started:
		ro.Status.StartedAt, ro.Status.Waves = &metav1.Time{Time: s.now}, s.waves
		ro.Status.CurrentWave, ro.Status.Blocked = "", ""
		if len(ro.Status.Waves) > 0 {
			ro.Status.CurrentWave = ro.Status.Waves[0].Name
		}
	case s.decision != nil:
		ro.Status.Waves = s.decision.Waves
		for i := range ro.Status.Waves {
			if n, ok := s.rolledBack[ro.Status.Waves[i].Name]; ok {
				ro.Status.Waves[i].RolledBack = n
			}
		}
		ro.Status.CurrentWave, ro.Status.Blocked = s.decision.Current, s.decision.Blocked
	}
	for i := range ro.Status.Waves {
		w := &ro.Status.Waves[i]
		if ro.Spec.Approval != configv1alpha1.RolloutApprovalManual {
			continue
		}
		w.ApprovedBy, w.ApprovedAt = configv1alpha1.WaveApprover(ro, w.Name), nil
		if w.ApprovedBy != "" {
			w.ApprovedAt = approvedAt[w.Name]
			if w.ApprovedAt == nil {
				w.ApprovedAt = &metav1.Time{Time: s.now}
			}
		}
	}
	ready, progressing, kstatus := phaseConditions(s, o)
	reconciler.SetConditions(&ro.Status.Conditions, gen, progressing)
	if d := s.decision; d != nil && d.Phase == rollout.PhaseComplete && (len(d.Waves) == 0 || allEmpty(d.Waves)) {
		reconciler.SetConditions(&ro.Status.Conditions, gen, metav1.Condition{Type: configv1alpha1.NoTargetsCondition, Status: metav1.ConditionTrue,
			Reason: configv1alpha1.NoTargetsReason, Message: ready.Message})
	}
	reconciler.SetConditions(&ro.Status.Conditions, gen, reconciler.KstatusConditions(gen, kstatus, ready)...)
	if kstatus.Complete() || s.started {
		ro.Status.ObservedGeneration = gen
	}
}

// patchStatus is the one place a rollout's status is written; a write
// computed for an older spec is dropped (reconciler.ErrStale). It returns
// the rollout as written (nil when it is gone).
func (r *Reconciler) patchStatus(ctx context.Context, s *scope, o reconciler.Outcome) (*configv1alpha1.PackageRollout, error) {
	gen := s.ro.Generation
	obj := s.ro.DeepCopy()
	_, err := reconciler.PatchStatus(ctx, r.Status, obj, func(ro *configv1alpha1.PackageRollout) (bool, error) {
		if ro.Generation != gen {
			return false, reconciler.ErrStale
		}
		setStatus(ro, s, o)
		return true, nil
	})
	if err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	observe(s.ro.Namespace, s.ro.Name, obj.Status.Waves)
	return obj, nil
}

// observe sets the rollout's metrics: waves by state, targets by state.
func observe(ns, name string, waves []configv1alpha1.WaveStatus) {
	byState := map[configv1alpha1.WaveState]float64{}
	var total, published, healthy, failed, dropped, rolledBack int32
	for _, w := range waves {
		byState[w.State]++
		total += w.Targets
		published += w.Published
		healthy += w.Healthy
		failed += w.Failed
		dropped += w.Dropped
		rolledBack += w.RolledBack
	}
	for _, st := range []configv1alpha1.WaveState{configv1alpha1.WavePending, configv1alpha1.WaveAwaitingApproval, configv1alpha1.WaveProgressing, configv1alpha1.WaveSoaking, configv1alpha1.WaveComplete, configv1alpha1.WaveFailed} {
		metrics.RolloutWaves.WithLabelValues(ns, name, string(st)).Set(byState[st])
	}
	for state, n := range map[string]int32{"total": total, "published": published, "healthy": healthy, "failed": failed, "dropped": dropped, "rolled_back": rolledBack} {
		metrics.RolloutTargets.WithLabelValues(ns, name, state).Set(float64(n))
	}
}

func allEmpty(waves []configv1alpha1.WaveStatus) bool {
	for _, w := range waves {
		if len(w.Revisions) > 0 {
			return false
		}
	}
	return true
}

// forget drops a deleted rollout's metrics.
func forget(ns, name string) {
	metrics.RolloutWaves.DeletePartialMatch(prometheus.Labels{"namespace": ns, "rollout": name})
	metrics.RolloutTargets.DeletePartialMatch(prometheus.Labels{"namespace": ns, "rollout": name})
}
