package rollout

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgdeps"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time { return &metav1.Time{Time: t0.Add(d)} }

func waves(started ...bool) []configv1alpha1.WaveStatus {
	out := []configv1alpha1.WaveStatus{
		{Name: "canary", State: configv1alpha1.WavePending, Revisions: []string{"c1.app.v2"}},
		{Name: "rest", State: configv1alpha1.WavePending, Revisions: []string{"c2.app.v2", "c3.app.v2"}},
	}
	for i, s := range started {
		if s {
			out[i].StartedAt, out[i].State = at(0), configv1alpha1.WaveProgressing
		}
	}
	return out
}

func proposed(name, repo string) Revision {
	return Revision{Name: name, Repository: repo, Exists: true, Lifecycle: porchv1alpha1.LifecycleProposed}
}

func published(name, repo string, after time.Duration, health *porchv1alpha1.Condition) Revision {
	return Revision{Name: name, Repository: repo, Exists: true, Lifecycle: porchv1alpha1.LifecyclePublished, PublishedAt: t0.Add(after), Health: health}
}

func synced(status string, at time.Duration) *porchv1alpha1.Condition {
	return &porchv1alpha1.Condition{Type: "example.com/synced", Status: porchv1alpha1.ConditionStatus(status), LastTransitionTime: &metav1.Time{Time: t0.Add(at)}}
}

func all(revs ...Revision) map[string]Revision {
	out := map[string]Revision{}
	for _, r := range revs {
		out[r.Name] = r
	}
	return out
}

func TestEvaluate(t *testing.T) {
	health := &configv1alpha1.RolloutHealth{ConditionType: "example.com/synced"}
	soak := &metav1.Duration{Duration: 5 * time.Minute}
	fresh := all(proposed("c1.app.v2", "c1"), proposed("c2.app.v2", "c2"), proposed("c3.app.v2", "c3"))
	for _, tc := range []struct {
		name     string
		spec     configv1alpha1.PackageRolloutSpec
		waves    []configv1alpha1.WaveStatus
		revs     map[string]Revision
		now      time.Duration
		phase    Phase
		current  string
		publish  []string
		blocked  string
		rollback bool
		retry    bool
		check    func(g Gomega, d Decision)
	}{
		{name: "a wave starts before anything of it is published",
			spec: configv1alpha1.PackageRolloutSpec{}, waves: waves(), revs: fresh,
			phase: PhaseProgressing, current: "canary", blocked: "wave canary: starting",
			check: func(g Gomega, d Decision) {
				g.Expect(d.Waves[0].StartedAt).NotTo(BeNil())
				g.Expect(d.Waves[1].StartedAt).To(BeNil())
			}},
		{name: "a started wave publishes its proposed revisions, and only those",
			spec: configv1alpha1.PackageRolloutSpec{}, waves: waves(true), revs: fresh,
			phase: PhaseProgressing, current: "canary", publish: []string{"c1.app.v2"}, blocked: "wave canary: 0 of 1 published, 0 healthy: c1 is not published yet"},
		{name: "published without the health condition waits, naming the target",
			spec: configv1alpha1.PackageRolloutSpec{Health: health}, waves: waves(true), now: time.Minute,
			revs:  all(published("c1.app.v2", "c1", time.Second, nil), proposed("c2.app.v2", "c2")),
			phase: PhaseProgressing, current: "canary", blocked: "wave canary: 1 of 1 published, 0 healthy: c1 has no example.com/synced condition yet"},
		{name: "a health condition from before the publish does not count",
			spec: configv1alpha1.PackageRolloutSpec{Health: health}, waves: waves(true), now: time.Minute,
			revs:  all(published("c1.app.v2", "c1", 10*time.Second, synced("True", 5*time.Second))),
			phase: PhaseProgressing, current: "canary", blocked: "c1 has a example.com/synced condition from before its revision was published"},
		{name: "healthy: the wave soaks",
			spec: configv1alpha1.PackageRolloutSpec{Health: health, SoakTime: soak}, waves: waves(true), now: time.Minute,
			revs:  all(published("c1.app.v2", "c1", time.Second, synced("True", 30*time.Second))),
			phase: PhaseSoaking, current: "canary", blocked: "wave canary: healthy, soaking until 2026-11-23T12:06:00Z"},
		{name: "soaked: the next wave starts",
			spec: configv1alpha1.PackageRolloutSpec{Health: health, SoakTime: soak},
			waves: func() []configv1alpha1.WaveStatus {
				w := waves(true)
				w[0].State, w[0].HealthyAt = configv1alpha1.WaveSoaking, at(time.Minute)
				return w
			}(), now: 7 * time.Minute,
			revs:  all(published("c1.app.v2", "c1", time.Second, synced("True", 30*time.Second)), proposed("c2.app.v2", "c2"), proposed("c3.app.v2", "c3")),
			phase: PhaseProgressing, current: "rest", blocked: "wave rest: starting",
			check: func(g Gomega, d Decision) {
				g.Expect(d.Waves[0].State).To(Equal(configv1alpha1.WaveComplete))
				g.Expect(d.Transitions).To(ContainElement("wave canary: Soaking -> Complete"))
			}},
		{name: "past the deadline beyond the budget: failed, rolled back, nothing published",
			spec:  configv1alpha1.PackageRolloutSpec{Health: health, RollbackOnFailure: true, ProgressDeadline: &metav1.Duration{Duration: time.Minute}},
			waves: waves(true, true), now: 3 * time.Minute,
			revs:  all(published("c1.app.v2", "c1", time.Second, synced("True", 2*time.Second)), published("c2.app.v2", "c2", time.Second, synced("False", 2*time.Second)), proposed("c3.app.v2", "c3")),
			phase: PhaseFailed, current: "rest", rollback: true, blocked: "1 targets unhealthy past the progress deadline (1m0s), more than maxUnavailable 0: c2 (example.com/synced is False)"},
		{name: "failed stays failed when the target recovers",
			spec: configv1alpha1.PackageRolloutSpec{Health: health},
			waves: func() []configv1alpha1.WaveStatus {
				w := waves(true)
				w[0].State = configv1alpha1.WaveFailed
				return w
			}(), now: 3 * time.Minute,
			revs:  all(published("c1.app.v2", "c1", time.Second, synced("True", 2*time.Minute)), proposed("c2.app.v2", "c2")),
			phase: PhaseFailed, current: "canary", blocked: "3 targets unhealthy: c1 (the rollout stopped: change its spec to resume it)"},
		{name: "a spec change resumes a failed rollout that rolled nothing back",
			spec: configv1alpha1.PackageRolloutSpec{Health: health}, retry: true,
			waves: func() []configv1alpha1.WaveStatus {
				w := waves(true)
				w[0].State = configv1alpha1.WaveFailed
				return w
			}(), now: 3 * time.Minute,
			revs:  all(published("c1.app.v2", "c1", time.Second, synced("False", 2*time.Second)), proposed("c2.app.v2", "c2")),
			phase: PhaseProgressing, current: "canary", blocked: "c1 example.com/synced is False",
			check: func(g Gomega, d Decision) { g.Expect(d.Waves[0].StartedAt.Time).To(Equal(t0.Add(3 * time.Minute))) }},
		{name: "after a rollback the rollout is finished",
			spec: configv1alpha1.PackageRolloutSpec{Health: health, RollbackOnFailure: true}, retry: true,
			waves: func() []configv1alpha1.WaveStatus {
				w := waves(true)
				w[0].State, w[0].RolledBack = configv1alpha1.WaveFailed, 1
				return w
			}(), now: 3 * time.Minute, revs: all(published("c1.app.v2", "c1", time.Second, nil)),
			phase: PhaseFailed, current: "canary", rollback: true, blocked: "3 targets unhealthy: c1 (the rollout rolled back what it published and is finished: a new rollout publishes again)"},
		{name: "within the budget the wave completes",
			spec:  configv1alpha1.PackageRolloutSpec{Health: health, MaxUnavailable: 1, ProgressDeadline: &metav1.Duration{Duration: time.Minute}},
			waves: waves(true), now: 3 * time.Minute,
			revs:  all(published("c1.app.v2", "c1", time.Second, nil), proposed("c2.app.v2", "c2"), proposed("c3.app.v2", "c3")),
			phase: PhaseProgressing, current: "rest", blocked: "wave rest: starting",
			check: func(g Gomega, d Decision) { g.Expect(d.Waves[0].Failed).To(Equal(int32(1))) }},
		{name: "manual: a wave waits for its approval",
			spec: configv1alpha1.PackageRolloutSpec{Approval: configv1alpha1.RolloutApprovalManual}, waves: waves(), revs: fresh,
			phase: PhaseAwaitingApproval, current: "canary", blocked: "wave canary awaits approval (spec.approvedWaves; scion rollout approve ROLLOUT canary)"},
		{name: "manual, approved: it starts",
			spec: configv1alpha1.PackageRolloutSpec{Approval: configv1alpha1.RolloutApprovalManual, ApprovedWaves: []string{"canary"}}, waves: waves(), revs: fresh,
			phase: PhaseProgressing, current: "canary", blocked: "wave canary: starting"},
		{name: "paused: nothing is published",
			spec: configv1alpha1.PackageRolloutSpec{Paused: true}, waves: waves(true), revs: fresh,
			phase: PhasePaused, current: "canary", blocked: "paused (spec.paused): wave canary: 0 of 1 published"},
		{name: "paused before a wave: it does not start",
			spec: configv1alpha1.PackageRolloutSpec{Paused: true}, waves: waves(), revs: fresh,
			phase: PhasePaused, current: "canary", blocked: "paused (spec.paused) before wave canary",
			check: func(g Gomega, d Decision) { g.Expect(d.Waves[0].StartedAt).To(BeNil()) }},
		{name: "aborted: nothing more, and a rollback when asked",
			spec: configv1alpha1.PackageRolloutSpec{Aborted: true, RollbackOnFailure: true}, waves: waves(true), revs: fresh,
			phase: PhaseAborted, current: "canary", rollback: true, blocked: "aborted"},
		{name: "a rejected revision drops out; the wave goes on without it",
			spec: configv1alpha1.PackageRolloutSpec{}, waves: waves(true), revs: all(Revision{Name: "c1.app.v2", Repository: "c1", Exists: true, Lifecycle: porchv1alpha1.LifecycleDraft}, proposed("c2.app.v2", "c2"), proposed("c3.app.v2", "c3")),
			phase: PhaseProgressing, current: "rest", blocked: "wave rest: starting",
			check: func(g Gomega, d Decision) {
				g.Expect(d.Waves[0].Dropped).To(Equal(int32(1)))
				g.Expect(d.Dropped).To(ConsistOf("c1.app.v2"))
			}},
		{name: "every wave complete",
			spec: configv1alpha1.PackageRolloutSpec{}, waves: waves(true, true),
			revs:  all(published("c1.app.v2", "c1", 0, nil), published("c2.app.v2", "c2", 0, nil), published("c3.app.v2", "c3", 0, nil)),
			phase: PhaseComplete, current: ""},
		{name: "a finished rollout is not judged again: a target unhealthy later (a newer revision deployed over it) fails and rolls back nothing",
			spec: configv1alpha1.PackageRolloutSpec{Health: health, RollbackOnFailure: true},
			waves: func() []configv1alpha1.WaveStatus {
				w := waves(true, true)
				for i := range w {
					w[i].State, w[i].Healthy, w[i].Published = configv1alpha1.WaveComplete, int32(len(w[i].Revisions)), int32(len(w[i].Revisions))
				}
				return w
			}(),
			revs: all(published("c1.app.v2", "c1", 0, synced("False", 2*time.Hour)), published("c2.app.v2", "c2", 0, synced("True", time.Minute)), published("c3.app.v2", "c3", 0, synced("True", time.Minute))),
			now:  3 * time.Hour, phase: PhaseComplete, current: "",
			check: func(g Gomega, d Decision) {
				g.Expect(d.Waves[0].Failed).To(BeZero())
				g.Expect(d.Waves[0].Healthy).To(Equal(int32(1)), "the counts it finished with")
				g.Expect(d.Transitions).To(BeEmpty())
			}},
		{name: "an empty wave completes at once, approval or not",
			spec:  configv1alpha1.PackageRolloutSpec{Approval: configv1alpha1.RolloutApprovalManual, ApprovedWaves: []string{"rest"}},
			waves: []configv1alpha1.WaveStatus{{Name: "empty", State: configv1alpha1.WavePending}, {Name: "rest", State: configv1alpha1.WavePending, Revisions: []string{"c2.app.v2"}}}, revs: fresh,
			phase: PhaseProgressing, current: "rest", blocked: "wave rest: starting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			d := Evaluate(&tc.spec, tc.waves, tc.revs, t0.Add(tc.now), tc.retry, "3 targets unhealthy: c1 (the rollout stopped: change its spec to resume it)")
			g.Expect(d.Phase).To(Equal(tc.phase))
			g.Expect(d.Current).To(Equal(tc.current))
			g.Expect(d.Publish).To(Equal(tc.publish))
			g.Expect(d.Blocked).To(ContainSubstring(tc.blocked))
			g.Expect(d.Rollback).To(Equal(tc.rollback))
			for i, w := range d.Waves {
				if tc.waves[i].StartedAt == nil {
					for _, r := range w.Revisions {
						g.Expect(d.Publish).NotTo(ContainElement(r), "never publishes a wave this decision starts")
					}
				}
			}
			if tc.check != nil {
				tc.check(g, d)
			}
		})
	}
}

// A group rollout: each target's group (app and its config) publishes all
// or none, once every member is Proposed with its gates True; it is
// published, healthy and failed as one.
func TestEvaluate_group(t *testing.T) {
	health := &configv1alpha1.RolloutHealth{ConditionType: "example.com/synced"}
	spec := &configv1alpha1.PackageRolloutSpec{Group: &configv1alpha1.RolloutGroup{PackageVariantSet: "platform"}, Health: health}
	wave := func() []configv1alpha1.WaveStatus {
		return []configv1alpha1.WaveStatus{{Name: "all", State: configv1alpha1.WaveProgressing, StartedAt: at(0),
			Revisions: []string{"c1.app.v2", "c1.app-config.v2", "c2.app.v2", "c2.app-config.v2"},
			Groups: []configv1alpha1.TargetGroup{
				{Repository: "c1", Revisions: []string{"c1.app.v2", "c1.app-config.v2"}},
				{Repository: "c2", Revisions: []string{"c2.app.v2", "c2.app-config.v2"}},
			}}}
	}
	member := func(r Revision, pkg string) Revision { r.Package = pkg; return r }
	draft := func(name, repo, pkg string) Revision {
		return Revision{Name: name, Repository: repo, Package: pkg, Exists: true, Lifecycle: porchv1alpha1.LifecycleDraft}
	}
	gated := member(proposed("c2.app.v2", "c2"), "app")
	gated.Unmet = []string{"example.com/approved-by-security"}
	for _, tc := range []struct {
		name    string
		revs    map[string]Revision
		now     time.Duration
		publish []string
		blocked string
		check   func(g Gomega, d Decision)
	}{
		{name: "a target whose group is whole publishes all of it; one with a draft member waits, naming it",
			revs: all(member(proposed("c1.app.v2", "c1"), "app"), member(proposed("c1.app-config.v2", "c1"), "app-config"),
				member(proposed("c2.app.v2", "c2"), "app"), draft("c2.app-config.v2", "c2", "app-config")),
			publish: []string{"c1.app.v2", "c1.app-config.v2"},
			blocked: "wave all: 0 of 2 published, 0 healthy: c1 is not published yet; c2 waits for its group: app-config (c2.app-config.v2) is Draft, not Proposed"},
		{name: "a member whose readiness gate is not True holds its whole group",
			revs: all(published("c1.app.v2", "c1", time.Second, synced("True", 2*time.Second)), published("c1.app-config.v2", "c1", time.Second, synced("True", 2*time.Second)),
				gated, member(proposed("c2.app-config.v2", "c2"), "app-config")),
			blocked: "wave all: 1 of 2 published, 1 healthy: c2 waits for its group: app (c2.app.v2) has readiness gates not True: example.com/approved-by-security",
			check: func(g Gomega, d Decision) {
				g.Expect(d.Waves[0].Published).To(Equal(int32(1)))
				g.Expect(d.Waves[0].Targets).To(Equal(int32(2)))
			}},
		{name: "a group is healthy when all of it is, and fails as one past the deadline",
			now: 11 * time.Minute,
			revs: all(published("c1.app.v2", "c1", time.Second, synced("True", 2*time.Second)), published("c1.app-config.v2", "c1", time.Second, synced("False", 2*time.Second)),
				published("c2.app.v2", "c2", time.Second, synced("True", 2*time.Second)), published("c2.app-config.v2", "c2", time.Second, synced("True", 2*time.Second))),
			check: func(g Gomega, d Decision) {
				g.Expect(d.Phase).To(Equal(PhaseFailed))
				g.Expect(d.Waves[0].Published).To(Equal(int32(2)))
				g.Expect(d.Waves[0].Healthy).To(Equal(int32(1)))
				g.Expect(d.Waves[0].Failed).To(Equal(int32(1)))
				g.Expect(d.Failed).To(Equal([]string{"c1 (c1.app-config.v2 example.com/synced is False)"}))
			}},
		{name: "a member deleted before anything of its group is published drops the target",
			revs: all(member(proposed("c1.app.v2", "c1"), "app"), member(proposed("c1.app-config.v2", "c1"), "app-config"),
				member(proposed("c2.app.v2", "c2"), "app")),
			publish: []string{"c1.app.v2", "c1.app-config.v2"},
			check: func(g Gomega, d Decision) {
				g.Expect(d.Waves[0].Dropped).To(Equal(int32(1)))
				g.Expect(d.Dropped).To(Equal([]string{"c2.app-config.v2"}))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			d := Evaluate(spec, wave(), tc.revs, t0.Add(tc.now), false, "")
			g.Expect(d.Publish).To(Equal(tc.publish))
			if tc.blocked != "" {
				g.Expect(d.Blocked).To(Equal(tc.blocked))
			}
			if tc.check != nil {
				tc.check(g, d)
			}
		})
	}
}

// What holds a group: gates not True, but not a dependencies gate that
// only waits for its dependencies to be published (the group publishes
// them in the same step).
func TestHoldingGates(t *testing.T) {
	g := NewWithT(t)
	pr := &porchv1alpha1.PackageRevision{}
	pr.Spec.ReadinessGates = []kptfilev1.ReadinessGate{{ConditionType: configv1alpha1.DependenciesReadinessGate}, {ConditionType: "example.com/approved"}}
	pr.Status.Conditions = []porchv1alpha1.Condition{
		{Type: configv1alpha1.DependenciesReadinessGate, Status: "False", Reason: pkgdeps.DependencyPendingReason},
		{Type: "example.com/approved", Status: "True"},
	}
	g.Expect(HoldingGates(pr)).To(BeEmpty())
	pr.Status.Conditions[0].Reason = pkgdeps.DependencyMissingReason
	g.Expect(HoldingGates(pr)).To(Equal([]string{configv1alpha1.DependenciesReadinessGate}))
	pr.Status.Conditions[1].Status = "False"
	g.Expect(HoldingGates(pr)).To(Equal([]string{configv1alpha1.DependenciesReadinessGate, "example.com/approved"}))
}
