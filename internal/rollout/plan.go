// Package rollout is what a PackageRollout decides, with no client: the
// validation of its plan, the waves its targets fall into (the same
// offline, in scion rollout plan, and in the controller), and the state of
// each wave from what the cluster shows.
package rollout

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

// Target is one repository a rollout publishes into: its labels (for
// wave selectors) and the Proposed revisions of it the rollout covers.
type Target struct {
	Repository string
	Labels     map[string]string
	Revisions  []string
}

// Wave is one planned wave.
type Wave struct {
	Name    string   `json:"name"`
	Targets []string `json:"targets"`
	// Revisions are the PackageRevision names of the wave's targets.
	Revisions []string `json:"-"`
	// Groups are the wave's targets with their revisions: what a group
	// rollout publishes together on each.
	Groups []configv1alpha1.TargetGroup `json:"groups,omitempty"`
}

// add puts a target into the wave (and its group, for a group rollout).
func (w *Wave) add(t Target, group bool) {
	w.Targets = append(w.Targets, t.Repository)
	w.Revisions = append(w.Revisions, t.Revisions...)
	if group {
		w.Groups = append(w.Groups, configv1alpha1.TargetGroup{Repository: t.Repository, Revisions: slices.Clone(t.Revisions)})
	}
}

// Plan is the waves of a rollout, in order.
type Plan struct {
	Waves []Wave `json:"waves"`
}

// MaxDuration bounds a rollout's progressDeadline and soakTime, as the
// CRD does.
const MaxDuration = 8760 * time.Hour

// Validate checks a rollout's spec as the CRD does, so that the plan is
// refused offline as at kubectl apply, naming the field.
func Validate(spec *configv1alpha1.PackageRolloutSpec) field.ErrorList {
	var errs field.ErrorList
	base := field.NewPath("spec")
	if _, err := metav1.LabelSelectorAsSelector(&spec.RevisionSelector); err != nil {
		errs = append(errs, field.Invalid(base.Child("revisionSelector"), spec.RevisionSelector, err.Error()))
	}
	seen := map[string]bool{}
	for i, w := range spec.Waves {
		p := base.Child("waves").Index(i)
		switch {
		case w.Name == "":
			errs = append(errs, field.Required(p.Child("name"), "a wave needs a name"))
		case w.Name == configv1alpha1.RemainderWave:
			errs = append(errs, field.Invalid(p.Child("name"), w.Name, "remainder is the name of the wave of the targets left over"))
		case seen[w.Name]:
			errs = append(errs, field.Duplicate(p.Child("name"), w.Name))
		}
		seen[w.Name] = true
		if w.MaxTargets != nil && w.Percent != nil {
			errs = append(errs, field.Invalid(p, "maxTargets and percent", "a wave has at most one size: maxTargets or percent"))
		}
		if w.MaxTargets != nil && *w.MaxTargets < 1 {
			errs = append(errs, field.Invalid(p.Child("maxTargets"), *w.MaxTargets, "must be at least 1"))
		}
		if w.Percent != nil && (*w.Percent < 1 || *w.Percent > 100) {
			errs = append(errs, field.Invalid(p.Child("percent"), *w.Percent, "must be from 1 to 100"))
		}
		if w.RepositorySelector != nil {
			if _, err := metav1.LabelSelectorAsSelector(w.RepositorySelector); err != nil {
				errs = append(errs, field.Invalid(p.Child("repositorySelector"), w.RepositorySelector, err.Error()))
			}
		}
	}
	if spec.MaxUnavailable < 0 {
		errs = append(errs, field.Invalid(base.Child("maxUnavailable"), spec.MaxUnavailable, "must not be negative"))
	}
	if d := spec.ProgressDeadline; d != nil && (d.Duration < time.Second || d.Duration > MaxDuration) {
		errs = append(errs, field.Invalid(base.Child("progressDeadline"), d.Duration.String(), "progressDeadline must be from 1s to 8760h"))
	}
	if d := spec.SoakTime; d != nil && (d.Duration < 0 || d.Duration > MaxDuration) {
		errs = append(errs, field.Invalid(base.Child("soakTime"), d.Duration.String(), "soakTime must be from 0s to 8760h"))
	}
	if h := spec.Health; h != nil {
		set := 0
		for _, v := range []string{h.ConditionType, h.Expr, string(h.Engine)} {
			if v != "" {
				set++
			}
		}
		switch {
		case set != 1:
			errs = append(errs, field.Invalid(base.Child("health"), "", "set exactly one of conditionType, expr and engine"))
		case h.Engine != "" && h.Engine != configv1alpha1.HealthEngineFlux:
			errs = append(errs, field.NotSupported(base.Child("health", "engine"), h.Engine, []configv1alpha1.HealthEngine{configv1alpha1.HealthEngineFlux}))
		case (h.Expr == "") != (h.Object == nil):
			errs = append(errs, field.Invalid(base.Child("health"), "", "expr and object go together: expr reads the object named by object"))
		default:
			_, herrs := CompileHealth(h)
			errs = append(errs, herrs...)
		}
	}
	for i, a := range spec.ApprovedWaves {
		if a != configv1alpha1.RemainderWave && !seen[a] {
			errs = append(errs, field.NotFound(base.Child("approvedWaves").Index(i), a))
		}
	}
	return errs
}

// Compute puts the targets into waves: each wave takes, from the targets
// not in an earlier wave, those its repositorySelector matches, sorted by
// repository name, up to its size (maxTargets, or percent of all the
// targets rounded up, at least 1; no size: all that match); the targets
// left form a final wave named remainder. Every wave of the spec is in
// the plan, empty ones too.
func Compute(spec *configv1alpha1.PackageRolloutSpec, targets []Target) (Plan, error) {
	if errs := Validate(spec); len(errs) > 0 {
		return Plan{}, errs.ToAggregate()
	}
	left := slices.Clone(targets)
	slices.SortFunc(left, func(a, b Target) int { return strings.Compare(a.Repository, b.Repository) })
	total := len(targets)
	var plan Plan
	for i, w := range spec.Waves {
		sel := labels.Everything()
		if w.RepositorySelector != nil {
			s, err := metav1.LabelSelectorAsSelector(w.RepositorySelector)
			if err != nil {
				return Plan{}, fmt.Errorf("spec.waves[%d].repositorySelector: %w", i, err)
			}
			sel = s
		}
		size := total
		switch {
		case w.MaxTargets != nil:
			size = int(*w.MaxTargets)
		case w.Percent != nil:
			size = max(1, (int(*w.Percent)*total+99)/100)
		}
		wave := Wave{Name: w.Name, Targets: []string{}}
		var rest []Target
		for _, t := range left {
			if len(wave.Targets) < size && sel.Matches(labels.Set(t.Labels)) {
				wave.add(t, spec.Group != nil)
				continue
			}
			rest = append(rest, t)
		}
		left = rest
		plan.Waves = append(plan.Waves, wave)
	}
	if len(left) > 0 {
		wave := Wave{Name: configv1alpha1.RemainderWave}
		for _, t := range left {
			wave.add(t, spec.Group != nil)
		}
		plan.Waves = append(plan.Waves, wave)
	}
	return plan, nil
}

// Targets groups the revisions among revs that sel matches by
// repository: a rollout's targets, with their Repository's labels
// (repoLabels, by name). A rollout takes the Proposed revisions; one of a
// group (group) also takes the Drafts, members of the group that are not
// proposed yet, which its targets wait for.
func Targets(sel labels.Selector, group bool, revs []porchv1alpha1.PackageRevision, repoLabels map[string]map[string]string) []Target {
	byRepo := map[string]*Target{}
	for _, pr := range revs {
		if !Member(&pr, group) || !sel.Matches(labels.Set(pr.Labels)) {
			continue
		}
		t := byRepo[pr.Spec.Repository]
		if t == nil {
			t = &Target{Repository: pr.Spec.Repository, Labels: repoLabels[pr.Spec.Repository]}
			byRepo[pr.Spec.Repository] = t
		}
		t.Revisions = append(t.Revisions, pr.Name)
	}
	out := make([]Target, 0, len(byRepo))
	for _, t := range byRepo {
		slices.Sort(t.Revisions)
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b Target) int { return strings.Compare(a.Repository, b.Repository) })
	return out
}

// Member says whether a revision a rollout's selector matches is one of
// its targets' revisions when the rollout starts: a Proposed one, or for
// a group a Draft too.
func Member(pr *porchv1alpha1.PackageRevision, group bool) bool {
	if !pr.DeletionTimestamp.IsZero() {
		return false
	}
	switch pr.Spec.Lifecycle {
	case porchv1alpha1.LifecycleProposed:
		return true
	case porchv1alpha1.LifecycleDraft, "":
		return group
	}
	return false
}
