package rollout

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgdeps"
	"github.com/scion-dev/scion/internal/pkgservice"
)

// DefaultProgressDeadline is how long a published target may take to
// become healthy when spec.progressDeadline is not set.
const DefaultProgressDeadline = 10 * time.Minute

// Revision is what the cluster shows of one revision of a rollout.
type Revision struct {
	Name       string
	Repository string
	// Exists is false once the object is gone.
	Exists    bool
	Lifecycle porchv1alpha1.Lifecycle
	// PublishedAt is when git published it (zero before).
	PublishedAt time.Time
	// Health is the health condition (nil: not set).
	Health *porchv1alpha1.Condition
	// Package is the revision's package (for messages).
	Package string
	// Unmet are, for a Proposed revision, its readiness gates whose
	// condition is not True: a group's target publishes none of its
	// revisions while one has any.
	Unmet []string
}

// HealthExprCondition is the type of the condition a health expression's
// verdict is given as (Revision.Health), in messages.
const HealthExprCondition = "spec.health.expr"

// HealthEngineCondition is the type of the condition a GitOps engine's
// verdict (spec.health.engine) is given as, in messages.
const HealthEngineCondition = "spec.health.engine"

// Phase is where a rollout as a whole is.
type Phase string

// Phases.
const (
	PhaseProgressing      Phase = "Progressing"
	PhaseSoaking          Phase = "Soaking"
	PhaseAwaitingApproval Phase = "AwaitingApproval"
	PhasePaused           Phase = "Paused"
	PhaseComplete         Phase = "Complete"
	PhaseFailed           Phase = "Failed"
	PhaseAborted          Phase = "Aborted"
)

// Decision is what the rollout does now.
type Decision struct {
	// Waves are the waves with their new state and counts.
	Waves []configv1alpha1.WaveStatus
	// Current is the wave the rollout is at ("" when complete).
	Current string
	Phase   Phase
	// Blocked says what the rollout waits on, or why it stopped.
	Blocked string
	// Publish are the revisions to publish now: only of a wave whose
	// start is already recorded in the status read (never one this
	// decision starts), so a crash cannot publish outside a started wave.
	Publish []string
	// Dropped are revisions that left the rollout since the last decision
	// (rejected or gone before they were published).
	Dropped []string
	// Failed names the targets past their deadline, unhealthy.
	Failed []string
	// Rollback asks for the rollout's published targets to be rolled back.
	Rollback bool
	// After is when to look again (0: on the next event).
	After time.Duration
	// Transitions are wave state changes, for events.
	Transitions []string
}

// Evaluate decides a started rollout's next step from its frozen waves
// (status), its spec and what the cluster shows of its revisions.
//
// A failed rollout stays failed: a target that recovers later does not
// resume it. retry (the spec changed since it failed) resumes a failed
// rollout that rolled nothing back, its failed waves starting their
// deadlines anew; one that rolled back is finished (a new rollout
// publishes again).
//
// lastBlocked is the status's last message: a failed rollout keeps saying
// why it failed.
func Evaluate(spec *configv1alpha1.PackageRolloutSpec, waves []configv1alpha1.WaveStatus, revs map[string]Revision, now time.Time, retry bool, lastBlocked string) Decision {
	d := Decision{Waves: make([]configv1alpha1.WaveStatus, len(waves))}
	for i := range waves {
		d.Waves[i] = *waves[i].DeepCopy()
	}
	if len(d.Waves) > 0 && !slices.ContainsFunc(d.Waves, func(w configv1alpha1.WaveStatus) bool { return w.State != configv1alpha1.WaveComplete }) {
		// Finished: what happens to its targets afterwards (a newer
		// revision deployed over them, a condition changed) is another
		// rollout's business; nothing is judged or rolled back again.
		d.Phase = PhaseComplete
		return d
	}
	failedWave, rolledBack := "", false
	for _, w := range d.Waves {
		if w.State == configv1alpha1.WaveFailed && failedWave == "" {
			failedWave = w.Name
		}
		rolledBack = rolledBack || w.RolledBack > 0
	}
	if failedWave != "" && (!retry || rolledBack) {
		d.Phase, d.Current, d.Rollback = PhaseFailed, failedWave, spec.RollbackOnFailure
		why := lastBlocked
		if i := strings.Index(why, " (the rollout "); i >= 0 {
			why = why[:i]
		}
		if why == "" {
			why = "wave " + failedWave + " failed"
		}
		d.Blocked = why + " (the rollout stopped: change its spec to resume it)"
		if rolledBack {
			d.Blocked = why + " (the rollout rolled back what it published and is finished: a new rollout publishes again)"
		}
		return d
	}
	for i := range d.Waves {
		if w := &d.Waves[i]; w.State == configv1alpha1.WaveFailed {
			w.State, w.StartedAt, w.HealthyAt = configv1alpha1.WaveProgressing, &metav1.Time{Time: now}, nil
			d.Transitions = append(d.Transitions, fmt.Sprintf("wave %s: Failed -> Progressing (resumed)", w.Name))
		}
	}
	deadline := DefaultProgressDeadline
	if spec.ProgressDeadline != nil {
		deadline = spec.ProgressDeadline.Duration
	}
	var soak time.Duration
	if spec.SoakTime != nil {
		soak = spec.SoakTime.Duration
	}
	// Count every started wave first: the failure budget is the
	// rollout's, over all its waves.
	pending := map[int]tally{} // wave -> what it waits on and may publish
	failedTotal := 0
	for i := range d.Waves {
		w := &d.Waves[i]
		if w.StartedAt == nil {
			w.Targets = int32(len(w.Revisions))
			if len(w.Groups) > 0 {
				w.Targets = int32(len(w.Groups))
			}
			continue
		}
		if len(w.Groups) > 0 {
			pending[i] = countGroups(w, revs, spec.Health, deadline, now, &d)
		} else {
			pending[i] = count(w, revs, spec.Health, deadline, now, &d)
		}
		failedTotal += int(w.Failed)
	}
	setState := func(w *configv1alpha1.WaveStatus, s configv1alpha1.WaveState) {
		if w.State != s {
			d.Transitions = append(d.Transitions, fmt.Sprintf("wave %s: %s -> %s", w.Name, w.State, s))
			w.State = s
		}
	}
	if failedTotal > int(spec.MaxUnavailable) {
		for i := range d.Waves {
			if w := &d.Waves[i]; w.State == configv1alpha1.WaveProgressing || w.State == configv1alpha1.WaveSoaking {
				setState(w, configv1alpha1.WaveFailed)
				d.Current = w.Name
			}
		}
		d.Phase, d.Rollback = PhaseFailed, spec.RollbackOnFailure
		d.Blocked = fmt.Sprintf("%d targets unhealthy past the progress deadline (%s), more than maxUnavailable %d: %s",
			failedTotal, deadline, spec.MaxUnavailable, strings.Join(d.Failed, ", "))
		return d
	}
	if spec.Aborted {
		d.Phase, d.Rollback = PhaseAborted, spec.RollbackOnFailure
		d.Blocked = "aborted (spec.aborted): nothing more is published"
		d.Current = currentWave(d.Waves)
		return d
	}
	for i := range d.Waves {
		w := &d.Waves[i]
		d.Current = w.Name
		if w.State == configv1alpha1.WaveComplete {
			continue
		}
		if len(w.Revisions) == 0 {
			setState(w, configv1alpha1.WaveComplete) // nothing to publish, approve or watch
			continue
		}
		if w.StartedAt == nil {
			switch {
			case spec.Paused:
				d.Phase, d.Blocked = PhasePaused, fmt.Sprintf("paused (spec.paused) before wave %s", w.Name)
				return d
			case spec.Approval == configv1alpha1.RolloutApprovalManual && !slices.Contains(spec.ApprovedWaves, w.Name):
				setState(w, configv1alpha1.WaveAwaitingApproval)
				d.Phase = PhaseAwaitingApproval
				d.Blocked = fmt.Sprintf("wave %s awaits approval (spec.approvedWaves; scion rollout approve ROLLOUT %s)", w.Name, w.Name)
				return d
			}
			// Start it; it publishes once the start is recorded.
			w.StartedAt = &metav1.Time{Time: now}
			setState(w, configv1alpha1.WaveProgressing)
			d.Phase = PhaseProgressing
			d.Blocked = fmt.Sprintf("wave %s: starting", w.Name)
			d.After = time.Millisecond
			return d
		}
		waiting := pending[i].waiting
		if len(waiting) > 0 {
			if w.State == configv1alpha1.WaveSoaking {
				w.HealthyAt = nil // a target fell ill while soaking
			}
			setState(w, configv1alpha1.WaveProgressing)
			d.Phase = PhaseProgressing
			if spec.Paused {
				d.Phase = PhasePaused
			} else {
				d.Publish = pending[i].publish
			}
			more := ""
			if len(waiting) > 3 {
				more = fmt.Sprintf(" and %d more", len(waiting)-3)
				waiting = waiting[:3]
			}
			d.Blocked = fmt.Sprintf("wave %s: %d of %d published, %d healthy: %s%s", w.Name, w.Published, w.Targets-w.Dropped, w.Healthy, strings.Join(waiting, "; "), more)
			if spec.Paused {
				d.Blocked = "paused (spec.paused): " + d.Blocked
			}
			d.After = nextDeadline(w, revs, deadline, now)
			return d
		}
		if w.HealthyAt == nil {
			w.HealthyAt = &metav1.Time{Time: now}
		}
		if until := w.HealthyAt.Add(soak); now.Before(until) {
			setState(w, configv1alpha1.WaveSoaking)
			d.Phase = PhaseSoaking
			d.Blocked = fmt.Sprintf("wave %s: healthy, soaking until %s", w.Name, until.UTC().Format(time.RFC3339))
			d.After = min(until.Sub(now), time.Minute) // health is looked at meanwhile
			return d
		}
		setState(w, configv1alpha1.WaveComplete)
	}
	d.Current, d.Phase, d.Blocked = "", PhaseComplete, ""
	return d
}

// tally is what a started wave waits on, by target, and which of its
// revisions may be published now.
type tally struct {
	waiting, publish []string
}

// published says whether a revision is published (in git).
func (r Revision) published() bool {
	return r.Exists && (r.Lifecycle == porchv1alpha1.LifecyclePublished || r.Lifecycle == porchv1alpha1.LifecycleDeletionProposed)
}

// count sets a started wave's counts, each revision a target, and
// returns what it waits on and may publish.
func count(w *configv1alpha1.WaveStatus, revs map[string]Revision, health *configv1alpha1.RolloutHealth, deadline time.Duration, now time.Time, d *Decision) tally {
	w.Targets = int32(len(w.Revisions))
	w.Published, w.Healthy, w.Failed = 0, 0, 0
	var t tally
	var dropped []string
	for _, name := range w.Revisions {
		r, ok := revs[name]
		published := ok && r.published()
		if !published && (!ok || !r.Exists || r.Lifecycle == porchv1alpha1.LifecycleDraft || r.Lifecycle == "") {
			dropped = append(dropped, name)
			continue
		}
		target := r.Repository
		if !published {
			t.waiting = append(t.waiting, target+" is not published yet")
			t.publish = append(t.publish, name)
			continue
		}
		w.Published++
		healthy, why := isHealthy(r, health)
		if healthy {
			w.Healthy++
			continue
		}
		if now.Sub(deadlineFrom(w, r)) > deadline {
			w.Failed++
			d.Failed = append(d.Failed, target+" ("+why+")")
			continue // counted against the budget, not waited on
		}
		t.waiting = append(t.waiting, target+" "+why)
	}
	if int32(len(dropped)) > w.Dropped {
		d.Dropped = append(d.Dropped, dropped...)
	}
	w.Dropped = int32(len(dropped))
	return t
}

// countGroups sets a started wave's counts for a group rollout, each
// target's group one unit, and returns what it waits on and may publish:
// a target's revisions are published all at once, when every one of them
// is Proposed with its readiness gates True (one that is a Draft, or back
// to Draft, is waited for, named); it is published when all are, healthy
// when all are, failed when one is unhealthy past the deadline. A target
// one of whose revisions is deleted before any is published leaves the
// rollout whole (dropped).
func countGroups(w *configv1alpha1.WaveStatus, revs map[string]Revision, health *configv1alpha1.RolloutHealth, deadline time.Duration, now time.Time, d *Decision) tally {
	w.Targets = int32(len(w.Groups))
	w.Published, w.Healthy, w.Failed = 0, 0, 0
	var t tally
	var dropped []string
	droppedTargets := int32(0)
	for _, g := range w.Groups {
		var published, ready, blockers, gone []string
		for _, name := range g.Revisions {
			r, ok := revs[name]
			switch {
			case ok && r.published():
				published = append(published, name)
			case !ok || !r.Exists:
				gone = append(gone, name)
			case r.Lifecycle == porchv1alpha1.LifecycleProposed && len(r.Unmet) == 0:
				ready = append(ready, name)
			case r.Lifecycle == porchv1alpha1.LifecycleProposed:
				blockers = append(blockers, fmt.Sprintf("%s (%s) has readiness gates not True: %s", cmp.Or(r.Package, name), name, strings.Join(r.Unmet, ", ")))
			default:
				blockers = append(blockers, fmt.Sprintf("%s (%s) is %s, not Proposed", cmp.Or(r.Package, name), name, cmp.Or(string(r.Lifecycle), string(porchv1alpha1.LifecycleDraft))))
			}
		}
		switch {
		case len(published) == 0 && len(gone) > 0:
			droppedTargets++
			dropped = append(dropped, gone...)
			continue
		case len(blockers) > 0:
			t.waiting = append(t.waiting, g.Repository+" waits for its group: "+strings.Join(blockers, ", "))
			continue
		case len(ready) > 0:
			t.waiting = append(t.waiting, g.Repository+" is not published yet")
			t.publish = append(t.publish, ready...)
			continue
		}
		w.Published++
		healthy, failed, why := true, false, ""
		for _, name := range published {
			r := revs[name]
			ok, reason := isHealthy(r, health)
			if ok {
				continue
			}
			if healthy {
				why = cmp.Or(r.Package, name) + " " + reason
			}
			healthy = false
			failed = failed || now.Sub(deadlineFrom(w, r)) > deadline
		}
		switch {
		case healthy:
			w.Healthy++
		case failed:
			w.Failed++
			d.Failed = append(d.Failed, g.Repository+" ("+why+")")
		default:
			t.waiting = append(t.waiting, g.Repository+" "+why)
		}
	}
	if droppedTargets > w.Dropped {
		d.Dropped = append(d.Dropped, dropped...)
	}
	w.Dropped = droppedTargets
	return t
}

// deadlineFrom is when a published target's progress deadline starts: its
// publish, or its wave's start if later (a wave resumed after a failure).
func deadlineFrom(w *configv1alpha1.WaveStatus, r Revision) time.Time {
	if w.StartedAt != nil && w.StartedAt.After(r.PublishedAt) {
		return w.StartedAt.Time
	}
	return r.PublishedAt
}

// isHealthy says whether a published revision is healthy on itself: its
// health condition is True and was set after it was published (a
// condition carried over from an older revision never counts).
func isHealthy(r Revision, health *configv1alpha1.RolloutHealth) (bool, string) {
	if health == nil {
		return true, ""
	}
	c := r.Health
	what := health.ConditionType
	switch {
	case health.Expr != "":
		what = HealthExprCondition
	case health.Engine != "":
		what = HealthEngineCondition
	}
	switch {
	case c == nil:
		return false, "has no " + what + " condition yet"
	case c.LastTransitionTime == nil || c.LastTransitionTime.Time.Before(r.PublishedAt):
		return false, "has a " + what + " condition from before its revision was published"
	case c.Status != porchv1alpha1.ConditionStatus(metav1.ConditionTrue):
		msg := what + " is " + string(c.Status)
		if c.Message != "" {
			msg += ": " + c.Message
		}
		return false, msg
	}
	return true, ""
}

// nextDeadline is when the next published, unhealthy target of the wave
// passes its deadline (bounded: health changes come as events).
func nextDeadline(w *configv1alpha1.WaveStatus, revs map[string]Revision, deadline time.Duration, now time.Time) time.Duration {
	next := deadline
	for _, name := range w.Revisions {
		r := revs[name]
		if r.PublishedAt.IsZero() {
			continue
		}
		if left := deadlineFrom(w, r).Add(deadline).Sub(now); left > 0 && left < next {
			next = left
		}
	}
	return next + time.Second
}

func currentWave(waves []configv1alpha1.WaveStatus) string {
	for _, w := range waves {
		if w.State != configv1alpha1.WaveComplete {
			return w.Name
		}
	}
	return ""
}

// HoldingGates are a Proposed revision's readiness gates that hold its
// group (Revision.Unmet): those not True, but for a dependencies gate
// that waits only for dependencies to be published (DependencyPending),
// which the rollout publishes in the same step (members of the group, or
// dependencies Scion installed), the revision then after them.
func HoldingGates(pr *porchv1alpha1.PackageRevision) []string {
	var out []string
	for _, g := range pkgservice.UnmetGates(pr.Spec.ReadinessGates, pr.Status.Conditions) {
		if g == configv1alpha1.DependenciesReadinessGate && slices.ContainsFunc(pr.Status.Conditions, func(c porchv1alpha1.Condition) bool {
			return c.Type == g && c.Reason == pkgdeps.DependencyPendingReason
		}) {
			continue
		}
		out = append(out, g)
	}
	return out
}
