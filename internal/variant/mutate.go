package variant

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/kptfile"
	"github.com/scion-dev/scion/internal/pkg"
)

// Condition reasons a PackageVariant's mutations set.
const (
	ContextInjectedReason     = "ContextInjected"
	NoContextReason           = "NoPackageContext"
	ContextNotRequestedReason = "NotRequested"
	ConfigInjectedReason      = "ConfigInjected"
	ConfigNotInjectedReason   = "ConfigNotInjected"
)

// Outcome is what Mutate did, as the conditions the PackageVariant shows.
type Outcome struct {
	ContextInjected metav1.Condition
	ConfigInjected  metav1.Condition
	Injection       InjectionResult
	// Changed reports whether the package changed.
	Changed bool
}

// Mutate applies a PackageVariant to a package, in the spec's order:
// package context, pipeline, configuration injection. (Cloning or updating
// comes before, rendering after.) A missing package context is an error
// only when the variant asks for context changes.
func Mutate(ctx context.Context, p *pkg.Package, pv *configv1alpha1.PackageVariant, src ObjectSource) (Outcome, error) {
	var out Outcome
	gen := pv.Generation
	changed, err := ApplyContext(p, pv.Spec.PackageContext)
	switch {
	case errors.Is(err, ErrNoPackageContext):
		out.ContextInjected = metav1.Condition{Type: configv1alpha1.ContextInjectedCondition, Status: metav1.ConditionFalse, Reason: NoContextReason, Message: err.Error(), ObservedGeneration: gen}
		return out, err
	case err != nil:
		return out, fmt.Errorf("package context: %w", err)
	case pv.Spec.PackageContext == nil:
		out.ContextInjected = metav1.Condition{Type: configv1alpha1.ContextInjectedCondition, Status: metav1.ConditionFalse, Reason: ContextNotRequestedReason, Message: "spec.packageContext is not set", ObservedGeneration: gen}
	default:
		out.ContextInjected = metav1.Condition{Type: configv1alpha1.ContextInjectedCondition, Status: metav1.ConditionTrue, Reason: ContextInjectedReason, Message: "the package context has the requested keys", ObservedGeneration: gen}
	}
	out.Changed = changed
	if changed, err = ApplyPipeline(p, pv.Name, pv.Spec.Pipeline); err != nil {
		return out, fmt.Errorf("pipeline: %w", err)
	}
	out.Changed = out.Changed || changed
	if out.Injection, err = InjectConfig(ctx, p, pv.Spec.Injectors, src); err != nil {
		return out, fmt.Errorf("config injection: %w", err)
	}
	out.Changed = out.Changed || out.Injection.Changed
	out.ConfigInjected = metav1.Condition{Type: configv1alpha1.ConfigInjectedCondition, Status: metav1.ConditionTrue, Reason: ConfigInjectedReason, Message: out.Injection.Message(), ObservedGeneration: gen}
	if !out.Injection.OK() {
		out.ConfigInjected.Status, out.ConfigInjected.Reason = metav1.ConditionFalse, ConfigNotInjectedReason
	}
	return out, nil
}

// MarkDone sets the config.porch.kpt.dev/packagevariant readiness gate of a
// draft and its condition, True once the variant finished mutating it.
func MarkDone(p *pkg.Package, done bool, message string) error {
	return p.EditKptfile(func(kf *kptfilev1.KptFile) error {
		kptfile.AddReadinessGate(kf, configv1alpha1.PackageVariantReadinessGate)
		c := kptfilev1.Condition{Type: configv1alpha1.PackageVariantReadinessGate, Status: kptfilev1.ConditionFalse, Reason: "Mutating", Message: message}
		if done {
			c.Status, c.Reason = kptfilev1.ConditionTrue, "Done"
		}
		kptfile.SetCondition(kf, c)
		return nil
	})
}
