package pkgservice

import (
	"fmt"
	"strings"
	"time"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

// ProposeDecision says whether a draft is proposed automatically now, or
// what it waits for.
type ProposeDecision struct {
	// Propose is true when every condition for it holds.
	Propose bool
	// Why says what holds it back (or, for a proposal, why it goes).
	Why string
	// After, when positive, is when to look again (nothing else would
	// bring the draft back: its content settling).
	After time.Duration
}

// VariantState is what auto-propose needs of a draft's PackageVariant.
type VariantState struct {
	// Name of the variant ("" when the draft has none).
	Name string
	// Ready for its current generation.
	Ready bool
}

// AutoPropose decides whether a Draft is proposed by Scion: only with
// AutoLifecycleAnnotation "true", once every readiness gate is True, its
// variant (if any) is Ready for its current generation, and its content
// has not changed for the settle time. Never earlier: a draft someone is
// still changing waits.
func AutoPropose(pr *porchv1alpha1.PackageRevision, lastChange time.Time, variant VariantState, now time.Time) (ProposeDecision, error) {
	if pr.Annotations[porchv1alpha1.AutoLifecycleAnnotation] != "true" {
		return ProposeDecision{Why: "not annotated " + porchv1alpha1.AutoLifecycleAnnotation + `: "true"`}, nil
	}
	settle := time.Duration(0)
	if v, ok := pr.Annotations[porchv1alpha1.AutoProposeSettleAnnotation]; ok {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return ProposeDecision{}, invalid("metadata.annotations[%s]: %q is not a duration such as 30s or 5m", porchv1alpha1.AutoProposeSettleAnnotation, v)
		}
		settle = d
	}
	if unmet := UnmetGates(pr.Spec.ReadinessGates, pr.Status.Conditions); len(unmet) > 0 {
		return ProposeDecision{Why: "readiness gates not met: " + strings.Join(unmet, ", ")}, nil
	}
	if variant.Name != "" && !variant.Ready {
		return ProposeDecision{Why: fmt.Sprintf("PackageVariant %s is not Ready for its current generation", variant.Name), After: 5 * time.Second}, nil
	}
	if left := settle - now.Sub(lastChange); left > 0 {
		return ProposeDecision{Why: fmt.Sprintf("its content changed %s ago; it settles for %s", now.Sub(lastChange).Round(time.Second), settle), After: left}, nil
	}
	why := "every readiness gate is True"
	if len(pr.Spec.ReadinessGates) == 0 {
		why = "it has no readiness gates"
	}
	if variant.Name != "" {
		why += ", PackageVariant " + variant.Name + " is Ready"
	}
	if settle > 0 {
		why += fmt.Sprintf(", unchanged for %s", settle)
	}
	return ProposeDecision{Propose: true, Why: why}, nil
}
