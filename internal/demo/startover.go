package demo

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/rpkg"
	"github.com/scion-dev/scion/internal/tree"
)

// storyRollout matches the names of the PackageRollouts the story
// creates (regional-app-vN, shop-vN), this run's and earlier runs'.
var storyRollout = regexp.MustCompile(`^(` + appSet + `|` + groupSet + `)-v\d+$`)

// storySets are the PackageVariantSets whose upstreams the story moves.
var storySets = []string{appSet, groupSet}

// leftovers is what an earlier run left of the story: its rollouts, its
// sets away from the examples' revisions, the hold of its rollback,
// revisions left Proposed.
type leftovers struct {
	rollouts []configv1alpha1.PackageRollout
	sets     []*configv1alpha2.PackageVariantSet
	held     *configv1alpha1.PackageVariant
	proposed []string
	// variants are the story's sets' PackageVariants, by name; revs the
	// namespace's PackageRevisions.
	variants []configv1alpha1.PackageVariant
	revs     []porchv1alpha1.PackageRevision
}

// describe names each leftover, for a person reading the demo.
func (l *leftovers) describe() []string {
	var out []string
	for i := range l.rollouts {
		out = append(out, fmt.Sprintf("PackageRollout %s (%s)", l.rollouts[i].Name, tree.RolloutState(&l.rollouts[i])))
	}
	for _, s := range l.sets {
		out = append(out, fmt.Sprintf("PackageVariantSet %s at %s", s.Name, revisionsOf(s.Spec.AllUpstreams())))
	}
	if l.held != nil {
		out = append(out, fmt.Sprintf("PackageVariant %s held by %s", l.held.Name, configv1alpha1.HoldUpstreamAnnotation))
	}
	if len(l.proposed) > 0 {
		out = append(out, fmt.Sprintf("%d revisions Proposed (%s)", len(l.proposed), describeMissing(l.proposed)))
	}
	return out
}

// revisionsOf is "v2" for one upstream, "shop-app v2, shop-config v2"
// for several.
func revisionsOf(ups []configv1alpha1.Upstream) string {
	if len(ups) == 1 {
		return string(ups[0].Revision)
	}
	var out []string
	for _, u := range ups {
		out = append(out, u.Package+" "+string(u.Revision))
	}
	return strings.Join(out, ", ")
}

// findLeftovers reads what an earlier run left of the story.
func (o *Options) findLeftovers(ctx context.Context, f *Fleet) (*leftovers, error) {
	ns := f.Namespace
	l := &leftovers{}
	rollouts := &configv1alpha1.PackageRolloutList{}
	if err := o.Client.List(ctx, rollouts, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	for _, ro := range rollouts.Items {
		if storyRollout.MatchString(ro.Name) {
			l.rollouts = append(l.rollouts, ro)
		}
	}
	revs := &porchv1alpha1.PackageRevisionList{}
	if err := o.Client.List(ctx, revs, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	l.revs = revs.Items
	for _, name := range storySets {
		set := &configv1alpha2.PackageVariantSet{}
		if err := o.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, set); err != nil {
			return nil, fmt.Errorf("PackageVariantSet %s: %w", name, err)
		}
		start := f.Start[name]
		if !equality.Semantic.DeepEqual(set.Spec.AllUpstreams(), start.AllUpstreams()) {
			l.sets = append(l.sets, set)
		}
		pvs := &configv1alpha1.PackageVariantList{}
		if err := o.Client.List(ctx, pvs, client.InNamespace(ns), client.MatchingLabels{configv1alpha2.PackageVariantSetLabel: string(set.UID)}); err != nil {
			return nil, err
		}
		l.variants = append(l.variants, pvs.Items...)
	}
	slices.SortFunc(l.variants, func(a, b configv1alpha1.PackageVariant) int { return strings.Compare(a.Name, b.Name) })
	for i, pv := range l.variants {
		if pv.Name == sickVariant && pv.Annotations[configv1alpha1.HoldUpstreamAnnotation] != "" {
			l.held = &l.variants[i]
		}
		for _, pr := range l.revisionsOf(&pv) {
			pending := pr.Spec.Lifecycle == porchv1alpha1.LifecyclePublished && pr.GitLifecycle() == porchv1alpha1.LifecycleProposed
			if pr.Spec.Lifecycle == porchv1alpha1.LifecycleProposed || pending {
				l.proposed = append(l.proposed, pr.Name)
			}
		}
	}
	return l, nil
}

// revisionsOf are the revisions of a variant's downstream package.
func (l *leftovers) revisionsOf(pv *configv1alpha1.PackageVariant) []porchv1alpha1.PackageRevision {
	var out []porchv1alpha1.PackageRevision
	if pv.Spec.Downstream == nil {
		return nil
	}
	for _, pr := range l.revs {
		if pr.Spec.Repository == pv.Spec.Downstream.Repo && pr.Spec.PackageName == pv.Spec.Downstream.Package {
			out = append(out, pr)
		}
	}
	return out
}

// startOver puts what the story changes back where it starts when an
// earlier run, whole or interrupted, left it elsewhere, and says what it
// found: the story's PackageRollouts are deleted (an interrupted run's
// halted or failed ones with them), the rollback's hold is removed,
// revisions left Proposed go back to Draft, the sets go back to the
// examples' upstream revisions, and a variant that has a published
// revision publishes its draft at them, as the fleet was once the first
// run had published it. Then every run tells the same story with the
// same upstream revisions, which are published once (releaseApp,
// publishGroupNext).
func (o *Options) startOver(ctx context.Context, f *Fleet) error {
	l, err := o.findLeftovers(ctx, f)
	if err != nil {
		return err
	}
	found := l.describe()
	if len(found) == 0 {
		return nil
	}
	ns := f.Namespace
	o.say("")
	o.say("==> an earlier run of the demo left: %s", strings.Join(found, "; "))
	var starts []string
	for _, name := range storySets {
		start := f.Start[name]
		starts = append(starts, name+" "+revisionsOf(start.AllUpstreams()))
	}
	o.say("==> the story starts over: its PackageRollouts are deleted, Proposed revisions go back to Draft, the sets back to the examples' revisions (%s), and the clusters publish them again", strings.Join(starts, "; "))
	for i := range l.rollouts {
		if err := o.deleteAndWait(ctx, &l.rollouts[i]); err != nil {
			return err
		}
	}
	// Read again: a rollout may have rolled back, held or published
	// since the first look, before it was deleted.
	if l, err = o.findLeftovers(ctx, f); err != nil {
		return err
	}
	if l.held != nil {
		patch := client.MergeFrom(l.held.DeepCopy())
		delete(l.held.Annotations, configv1alpha1.HoldUpstreamAnnotation)
		if err := o.Client.Patch(ctx, l.held, patch); err != nil {
			return fmt.Errorf("PackageVariant %s: removing %s: %w", l.held.Name, configv1alpha1.HoldUpstreamAnnotation, err)
		}
	}
	rc := &rpkg.Client{Client: o.Client, Namespace: ns, Timeout: o.timeout()}
	for _, name := range l.proposed {
		// A pending approval is withdrawn first (it stays Proposed), then
		// rejected.
		for range 2 {
			pr, err := rc.Reject(ctx, name)
			if errors.Is(err, rpkg.ErrLost) {
				break // moved on meanwhile (published): the sets' move takes it from there
			}
			if err != nil {
				return err
			}
			if pr.Spec.Lifecycle == porchv1alpha1.LifecycleDraft {
				break
			}
		}
	}
	for _, set := range l.sets {
		patch := client.MergeFrom(set.DeepCopy())
		start := f.Start[set.Name]
		set.Spec.Upstream, set.Spec.Upstreams = start.Upstream, start.Upstreams
		if err := o.Client.Patch(ctx, set, patch); err != nil {
			return fmt.Errorf("PackageVariantSet %s: %w", set.Name, err)
		}
	}
	if err := o.WaitReady(ctx, f); err != nil {
		return err
	}
	// What the variants wrote at the examples' revisions.
	if l, err = o.findLeftovers(ctx, f); err != nil {
		return err
	}
	var published []string
	for i := range l.variants {
		var draft *porchv1alpha1.PackageRevision
		hasPublished := false
		for _, pr := range l.revisionsOf(&l.variants[i]) {
			switch pr.Spec.Lifecycle {
			case porchv1alpha1.LifecycleDraft:
				draft = &pr
			case porchv1alpha1.LifecyclePublished:
				hasPublished = true
			}
		}
		if draft == nil || !hasPublished {
			continue
		}
		if slices.ContainsFunc(draft.Spec.ReadinessGates, func(g kptfilev1.ReadinessGate) bool { return g.ConditionType == canaryGate }) {
			if _, err := rc.SetCondition(ctx, draft.Name, porchv1alpha1.Condition{Type: canaryGate, Status: "True", Reason: "StartOver", Message: "the demo starts its story over"}); err != nil {
				return err
			}
		}
		if _, err := rc.Propose(ctx, draft.Name); err != nil {
			return err
		}
		if _, err := rc.Approve(ctx, draft.Name); err != nil {
			return err
		}
		published = append(published, draft.Name)
	}
	o.say("    %d revisions published again at the examples' revisions", len(published))
	return nil
}

// deleteAndWait deletes an object and waits until it is gone.
func (o *Options) deleteAndWait(ctx context.Context, obj client.Object) error {
	if err := o.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting %s: %w", obj.GetName(), err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, o.timeout(), true, func(ctx context.Context) (bool, error) {
		err := o.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		return fmt.Errorf("waiting for %s to be deleted: %w", obj.GetName(), err)
	}
	return nil
}
