package variant

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/engine"
	"github.com/scion-dev/scion/internal/pkg"
)

// Condition reasons of DownstreamEnsured (and so of Ready).
const (
	DownstreamReadyReason = "DownstreamReady"
	MutationFailedReason  = "MutationFailed"
	RenderFailedReason    = "RenderFailed"
	// FunctionRefusedReason: the pipeline has a function the controller's
	// policy refuses (an exec function, an image not allowed); nothing
	// is written.
	FunctionRefusedReason = "FunctionRefused"
)

// ErrFunctionRefused is matched by the error of a variant whose pipeline
// has a function the runtime's policy refuses: nothing was written.
var ErrFunctionRefused = errors.New("the pipeline has a function this controller does not run")

// Input is what producing a variant's downstream package needs.
type Input struct {
	PV *configv1alpha1.PackageVariant
	// Upstream is the upstream revision's package and Origin its identity.
	Upstream *pkg.Package
	Origin   engine.Origin
	// Downstream is the current downstream package (nil: clone anew);
	// OldUpstream is what it was derived from (nil: do not 3-way update,
	// only re-apply the variant's mutations).
	Downstream  *pkg.Package
	OldUpstream *pkg.Package
	// Deployment clones with a package context.
	Deployment bool
	// ContextHint says how to get a package context when the package has
	// none, in the caller's terms (a flag, a field); it is added to the
	// message.
	ContextHint string
	Objects     ObjectSource
	Runtime     engine.Resolver
}

// Output is the produced package and the conditions the PackageVariant
// shows for it (DownstreamEnsured and the mutations'; Ready is the
// controller's verdict from them).
type Output struct {
	Package    *pkg.Package
	Outcome    Outcome
	Conditions []metav1.Condition
}

// Produce makes the downstream package of a PackageVariant, in the
// spec's order: clone (or 3-way update), package context, pipeline,
// configuration injection, render; then it marks the draft done with the
// config.porch.kpt.dev/packagevariant gate. Failures of the variant's own
// making (missing package context, render errors) come back in the
// conditions, with the error.
func Produce(ctx context.Context, in Input) (Output, error) {
	gen := in.PV.Generation
	var out Output
	fail := func(reason string, err error) (Output, error) {
		out.Conditions = append(out.Conditions,
			metav1.Condition{Type: configv1alpha1.DownstreamEnsuredCondition, Status: metav1.ConditionFalse, Reason: reason, Message: err.Error(), ObservedGeneration: gen})
		return out, err
	}
	out.Conditions = []metav1.Condition{{Type: configv1alpha1.ValidCondition, Status: metav1.ConditionTrue, Reason: configv1alpha1.ValidReason, ObservedGeneration: gen}}
	if errs := Validate(in.PV); len(errs) > 0 {
		out.Conditions[0] = metav1.Condition{Type: configv1alpha1.ValidCondition, Status: metav1.ConditionFalse, Reason: configv1alpha1.ValidationErrorReason, Message: errs.ToAggregate().Error(), ObservedGeneration: gen}
		return fail(configv1alpha1.ValidationErrorReason, errs.ToAggregate())
	}
	var p *pkg.Package
	var err error
	switch {
	case in.Downstream == nil:
		p, err = engine.Clone(in.Upstream, in.Origin, engine.CloneOptions{Name: path.Base(in.PV.Spec.Downstream.Package), PackagePath: in.PV.Spec.Downstream.Package, ForDeployment: in.Deployment})
	case in.OldUpstream != nil:
		p, _, err = engine.Update(in.Downstream, in.OldUpstream, in.Upstream, in.Origin, "")
	default:
		p = in.Downstream.DeepCopy()
	}
	if err != nil {
		return fail(MutationFailedReason, err)
	}
	out.Outcome, err = Mutate(ctx, p, in.PV, in.Objects)
	if errors.Is(err, ErrNoPackageContext) && in.ContextHint != "" {
		err = fmt.Errorf("%w: %s", err, in.ContextHint)
		out.Outcome.ContextInjected.Message = err.Error()
	}
	out.Conditions = append(out.Conditions, conditionsOf(out.Outcome)...)
	if err != nil {
		return fail(MutationFailedReason, err)
	}
	if err := engine.CheckFunctions(p, in.Runtime); err != nil {
		return fail(FunctionRefusedReason, fmt.Errorf("%w: %w; nothing is written", ErrFunctionRefused, err))
	}
	rendered, _, err := engine.Render(ctx, p, in.Runtime)
	if err != nil {
		var re *engine.RenderError
		if errors.As(err, &re) {
			out.Package = rendered
			return fail(RenderFailedReason, err)
		}
		return fail(MutationFailedReason, err)
	}
	done := out.Outcome.Injection.OK()
	msg := "the variant's mutations are applied"
	if !done {
		msg = out.Outcome.ConfigInjected.Message
	}
	if err := MarkDone(rendered, true, msg); err != nil {
		return fail(MutationFailedReason, err)
	}
	out.Package = rendered
	if !done {
		// The draft is written, but it is not what the variant asks for.
		err := fmt.Errorf("configuration injection is incomplete: %s", out.Outcome.ConfigInjected.Message)
		out.Conditions = append(out.Conditions,
			metav1.Condition{Type: configv1alpha1.DownstreamEnsuredCondition, Status: metav1.ConditionFalse, Reason: ConfigNotInjectedReason, Message: err.Error(), ObservedGeneration: gen})
		return out, nil
	}
	out.Conditions = append(out.Conditions,
		metav1.Condition{Type: configv1alpha1.DownstreamEnsuredCondition, Status: metav1.ConditionTrue, Reason: DownstreamReadyReason, Message: "the downstream draft reflects the variant", ObservedGeneration: gen})
	return out, nil
}

func conditionsOf(o Outcome) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range []metav1.Condition{o.ContextInjected, o.ConfigInjected} {
		if c.Type != "" {
			out = append(out, c)
		}
	}
	return out
}

// SameContent reports whether two packages are the same but for the
// Kptfile's status.renderStatus, which records how a render went (function
// messages such as "removed 1 resources" differ between a first render and
// a re-render of the same result).
func SameContent(a, b *pkg.Package) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Equal(b) {
		return true // the usual answer for a variant that changed nothing
	}
	// Only a Kptfile that differs can be the same content: compare the
	// other files first, without parsing anything.
	af, bf := a.Files(), b.Files()
	if len(af) != len(bf) {
		return false
	}
	for name, data := range af {
		if other, ok := bf[name]; !ok || (name != kptfilev1.KptFileName && !bytes.Equal(data, other)) {
			return false
		}
	}
	strip := func(p *pkg.Package) *pkg.Package {
		c := p.DeepCopy()
		_ = c.EditKptfile(func(kf *kptfilev1.KptFile) error {
			if kf.Status != nil {
				kf.Status.RenderStatus = nil
			}
			return nil
		})
		return c
	}
	return strip(a).Equal(strip(b))
}
