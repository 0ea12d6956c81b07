package packagevariantset

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	"github.com/scion-dev/scion/internal/reconciler"
)

// maxNamed bounds the PackageVariants a VariantsReady message names.
const maxNamed = 10

// variantsReadyCondition says whether every generated PackageVariant is
// Ready: False with the reason of a stall or failure, or naming the
// variants not Ready yet.
func variantsReadyCondition(s *scope, o reconciler.Outcome) metav1.Condition {
	c := metav1.Condition{Type: configv1alpha2.VariantsReadyCondition, Status: metav1.ConditionFalse}
	switch {
	case o.Stalled != nil:
		c.Reason, c.Message = o.Stalled.Reason, "the set is stalled: "+o.Stalled.Message
	case o.Waiting != nil:
		c.Reason, c.Message = o.Waiting.Reason, "the set waits: "+o.Waiting.Message
	case o.Err != nil || s.summary == nil:
		c.Reason, c.Message = configv1alpha2.UnexpectedErrorReason, "the set's PackageVariants could not all be written"
	case len(s.notReady) == 0:
		c.Status, c.Reason = metav1.ConditionTrue, configv1alpha2.AllVariantsReadyReason
		c.Message = fmt.Sprintf("all %d PackageVariants are Ready", s.summary.Desired)
		if s.summary.Desired == 0 {
			c.Message = "the targets generate no PackageVariants"
		}
	default:
		names := named(s.notReady)
		more := ""
		if len(s.notReady) > len(names) {
			more = fmt.Sprintf(" and %d more", len(s.notReady)-len(names))
		}
		c.Reason = configv1alpha2.VariantsNotReadyReason
		c.Message = fmt.Sprintf("%d of %d PackageVariants are Ready; waiting for %s%s", s.summary.Ready, s.summary.Desired, strings.Join(names, ", "), more)
	}
	return c
}

// named is the first maxNamed of the sorted names of variants not Ready
// (status.summary.notReady, and the VariantsReady condition's message).
func named(notReady []string) []string {
	names := slices.Sorted(slices.Values(notReady))
	if len(names) > maxNamed {
		names = names[:maxNamed]
	}
	if len(names) == 0 {
		return nil
	}
	return names
}

// upstreamSummary counts, for a set of several upstreams, the variants of
// each (by the upstream their spec names) and how many of them are Ready
// (those not in notReady); nil for a set of one upstream.
func upstreamSummary(spec *configv1alpha2.PackageVariantSetSpec, variants []*configv1alpha1.PackageVariant, notReady []string) []configv1alpha2.UpstreamSummary {
	if spec.Upstreams == nil {
		return nil
	}
	out := make([]configv1alpha2.UpstreamSummary, len(spec.Upstreams))
	at := map[string]int{}
	for i, u := range spec.Upstreams {
		out[i] = configv1alpha2.UpstreamSummary{Repo: u.Repo, Package: u.Package}
		at[u.Repo+"/"+u.Package] = i
	}
	waiting := map[string]bool{}
	for _, n := range notReady {
		waiting[n] = true
	}
	for _, pv := range variants {
		u := pv.Spec.Upstream
		if u == nil {
			continue
		}
		i, ok := at[u.Repo+"/"+u.Package]
		if !ok {
			continue // of an upstream removed a moment ago
		}
		out[i].Desired++
		if !waiting[pv.Name] {
			out[i].Ready++
		}
	}
	return out
}

// readyCondition is the set's Ready verdict: its PackageVariants are
// written (each variant's own Ready is in VariantsReady), or why not.
func readyCondition(s *scope, o reconciler.Outcome) metav1.Condition {
	if o.Err != nil {
		return metav1.Condition{Status: metav1.ConditionFalse, Reason: configv1alpha2.UnexpectedErrorReason, Message: o.Err.Error()}
	}
	msg := "no PackageVariants"
	if sm := s.summary; sm != nil {
		msg = fmt.Sprintf("%d PackageVariants, %d ready", sm.Desired, sm.Ready)
	}
	return metav1.Condition{Status: metav1.ConditionTrue, Reason: configv1alpha2.ReconciledReason, Message: msg}
}

// setStatus sets the status of pvs from what the reconcile learned,
// adding this reconcile's writes to the counts pvs has for its
// generation; observedGeneration moves only for a complete reconcile.
func setStatus(pvs *configv1alpha2.PackageVariantSet, s *scope, o reconciler.Outcome) {
	gen := pvs.Generation
	reconciler.SetConditions(&pvs.Status.Conditions, gen, variantsReadyCondition(s, o))
	switch {
	case len(s.empty) > 0:
		reconciler.SetConditions(&pvs.Status.Conditions, gen, metav1.Condition{Type: configv1alpha2.NoTargetsCondition, Status: metav1.ConditionTrue,
			Reason: configv1alpha2.NoTargetsReason, Message: strings.Join(s.empty, "; ")})
	case s.expanded:
		meta.RemoveStatusCondition(&pvs.Status.Conditions, configv1alpha2.NoTargetsCondition)
	}
	reconciler.SetConditions(&pvs.Status.Conditions, gen, reconciler.KstatusConditions(gen, o, readyCondition(s, o))...)
	if s.summary != nil {
		sum := *s.summary
		sum.Generation = gen
		sum.NotReady = named(s.notReady)
		// The counts of the generation's earlier reconciles, including
		// those that wrote and then failed (observedGeneration has not
		// moved for them).
		if prev := pvs.Status.Summary; prev != nil && prev.Generation == gen {
			sum.Created += prev.Created
			sum.Updated += prev.Updated
			sum.Deleted += prev.Deleted
		}
		pvs.Status.Summary = &sum
	}
	var names []string
	for _, u := range pvs.Spec.AllUpstreams() {
		names = append(names, u.Package)
	}
	pvs.Status.Upstream = strings.Join(names, ", ")
	if o.Complete() {
		pvs.Status.ObservedGeneration = gen
	}
}

// patchStatus is the one place that writes a set's status. The summary's
// write counts add up over the reconciles of one generation of the spec,
// so they are added onto the status the patch applies to; on a conflict
// (the cache was behind) the set is read again and the status computed
// anew, unless the spec moved on meanwhile (reconciler.ErrStale: this
// reconcile's view is stale, the change brings the set back).
func (r *Reconciler) patchStatus(ctx context.Context, s *scope, o reconciler.Outcome) error {
	gen := s.pvs.Generation
	before := meta.FindStatusCondition(s.pvs.Status.Conditions, configv1alpha1.StalledCondition)
	_, err := reconciler.PatchStatus(ctx, r.Status, s.pvs.DeepCopy(), func(pvs *configv1alpha2.PackageVariantSet) (bool, error) {
		if pvs.Generation != gen {
			return false, reconciler.ErrStale
		}
		setStatus(pvs, s, o)
		return true, nil
	})
	if err != nil {
		return client.IgnoreNotFound(err)
	}
	if o.Stalled != nil && (before == nil || before.Status != metav1.ConditionTrue || before.Reason != o.Stalled.Reason || before.Message != o.Stalled.Message) {
		r.Recorder.Eventf(s.pvs, nil, "Warning", o.Stalled.Reason, "Reconcile", "%s", o.Stalled.Message)
	}
	return nil
}
