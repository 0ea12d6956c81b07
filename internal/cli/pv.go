package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/deps"
	"github.com/scion-dev/scion/internal/engine"
	"github.com/scion-dev/scion/internal/fn"
	"github.com/scion-dev/scion/internal/fn/builtin"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/pkgdeps"
	"github.com/scion-dev/scion/internal/variant"
)

// NewCmdPv returns `scion pv`, PackageVariant tools.
func NewCmdPv(streams Streams) *cobra.Command {
	cmd := &cobra.Command{Use: "pv", Short: "PackageVariant tools that work offline"}
	cmd.AddCommand(NewCmdPvRender(streams))
	return cmd
}

// PvRenderOptions are the options of `scion pv render`.
type PvRenderOptions struct {
	Streams
	File, Upstream, Downstream, Origin, OutDir string
	Catalog, Installed                         string
	Objects                                    []string
	Deployment, AllowExec                      bool
	// FunctionImages are the images the pipeline may run as containers,
	// as the controller's --function-images: none unless given.
	FunctionImages []string
}

// NewCmdPvRender returns `scion pv render`.
func NewCmdPvRender(streams Streams) *cobra.Command {
	o := &PvRenderOptions{Streams: streams}
	cmd := &cobra.Command{
		Use:   "render -f PV.yaml --upstream DIR --out DIR",
		Short: "Apply a PackageVariant to local packages, as the controller would",
		Long: `Apply a PackageVariant to local packages and write the result to --out:
without --downstream, the package in --upstream is cloned (the create path);
with --downstream, the variant is applied to that existing package, after a
3-way update from --origin to --upstream when --origin is given (the update
path). The YAML objects of --objects stand in for the in-cluster objects of
configuration injection. Prints the status conditions the PackageVariant
would get; exits non-zero when the variant is invalid or its downstream not
ensured.

With --catalog (a folder of published revisions, as scion deps resolve
reads it) the variant's dependencies are checked as the controller checks
them (with spec.dependencies, or as a check only without it): the
DependenciesReady condition is printed, the package gets the
config.porch.kpt.dev/dependencies gate, and the command exits non-zero when
the dependencies have no solution or conflict with what --installed (a
checkout of the downstream repository) holds.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.File, "filename", "f", "", "YAML holding the PackageVariant; other kinds in it are ignored; - reads standard input (required)")
	f.StringVar(&o.Upstream, "upstream", "", "folder of the upstream package (required)")
	f.StringVar(&o.Downstream, "downstream", "", "folder of the existing downstream package (the update path)")
	f.StringVar(&o.Origin, "origin", "", "with --downstream: folder of the upstream the downstream was derived from, to 3-way update from")
	f.StringArrayVar(&o.Objects, "objects", nil, "YAML of in-cluster objects for injection, several documents or a List; - reads standard input (repeatable)")
	f.BoolVar(&o.Deployment, "deployment", false, "the downstream repository is a deployment repository (clone with a package context)")
	f.BoolVar(&o.AllowExec, "allow-exec", false, "allow exec functions in the pipeline")
	addFunctionImagesFlag(f, &o.FunctionImages)
	f.StringVar(&o.OutDir, "out", "", "folder to write the resulting package to (required)")
	f.StringVar(&o.Catalog, "catalog", "", "folder of published revisions, <package path>/<version>/: check the variant's dependencies")
	f.StringVar(&o.Installed, "installed", "", "with --catalog: checkout of the downstream repository")
	return cmd
}

// Validate checks the flags.
func (o *PvRenderOptions) Validate() error {
	var errs []error
	for _, f := range []struct{ flag, value string }{{"--filename", o.File}, {"--upstream", o.Upstream}, {"--out", o.OutDir}} {
		if f.value == "" {
			errs = append(errs, fmt.Errorf("%s is required", f.flag))
		}
	}
	if o.Origin != "" && o.Downstream == "" {
		errs = append(errs, errors.New("--origin needs --downstream"))
	}
	if o.Installed != "" && o.Catalog == "" {
		errs = append(errs, errors.New("--installed needs --catalog"))
	}
	if err := stdinOnce(append([]string{o.File}, o.Objects...)...); err != nil {
		errs = append(errs, err)
	}
	if err := fn.ValidateImagePatterns(o.FunctionImages); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Run renders the variant.
func (o *PvRenderOptions) Run(cmd *cobra.Command) error {
	pvs, err := readTyped(o.Streams, o.File, configv1alpha1.GroupVersion.WithKind("PackageVariant"), func() *configv1alpha1.PackageVariant {
		return &configv1alpha1.PackageVariant{}
	})
	if err != nil {
		return err
	}
	if len(pvs) > 1 {
		return fmt.Errorf("%s has %d PackageVariants; pv render renders one into --out", o.File, len(pvs))
	}
	pv := pvs[0]
	ns := pv.Namespace
	if ns == "" {
		ns = "default"
	}
	objects := &variant.StaticObjects{Ns: ns}
	for _, f := range o.Objects {
		objs, err := o.readObjects(f)
		if err != nil {
			return err
		}
		// The controller injects only from the variant's namespace.
		var elsewhere []string
		for _, obj := range objs {
			if obj.GetNamespace() != "" && obj.GetNamespace() != ns {
				elsewhere = append(elsewhere, obj.GetKind()+" "+obj.GetNamespace()+"/"+obj.GetName())
				continue
			}
			objects.Objects = append(objects.Objects, obj)
		}
		if len(elsewhere) > 0 {
			_, _ = fmt.Fprintf(o.ErrOut, "warning: %s: not injected, as the controller injects only from the variant's namespace %s: %s\n", f, ns, strings.Join(elsewhere, ", "))
		}
	}
	up, err := pkg.ReadDir(o.Upstream)
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(o.Upstream)
	if err != nil {
		return err
	}
	in := variant.Input{PV: pv, Upstream: up, Deployment: o.Deployment, Objects: objects,
		ContextHint: "pass --deployment to clone the upstream as a deployment package (the controller does so for a Repository with spec.deployment: true), or add the ConfigMap to the upstream package"}
	if pv.Spec.Upstream != nil {
		in.Origin = engine.Origin{Repo: "file://" + abs, Directory: pv.Spec.Upstream.Package, Ref: upstreamRef(pv.Spec.Upstream)}
	}
	if o.Downstream != "" {
		if in.Downstream, err = pkg.ReadDir(o.Downstream); err != nil {
			return err
		}
	}
	if o.Origin != "" {
		if in.OldUpstream, err = pkg.ReadDir(o.Origin); err != nil {
			return err
		}
	}
	rt := builtin.ServerRuntime(o.FunctionImages, nil) // as the controller,
	rt.DisableExec = !o.AllowExec                      // but exec functions when asked
	in.Runtime = rt
	ctx := cmdContext(cmd)
	out, produceErr := variant.Produce(ctx, in)
	var depsCond *metav1.Condition
	if o.Catalog != "" && out.Package != nil {
		c, err := o.checkDependencies(pv, up)
		if err != nil {
			return err
		}
		depsCond = &c
		out.Conditions = append(out.Conditions, c)
		if err := pkgdeps.ApplyGate(out.Package, ptr.To(c.Status == metav1.ConditionTrue), c.Reason, c.Message); err != nil {
			return err
		}
	}
	if out.Package != nil {
		if err := out.Package.WriteDir(o.OutDir); err != nil {
			return err
		}
	}
	type condition struct {
		Type    string `json:"type"`
		Status  string `json:"status"`
		Reason  string `json:"reason"`
		Message string `json:"message,omitempty"`
	}
	var conds []condition
	for _, c := range out.Conditions {
		conds = append(conds, condition{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	report, err := yaml.Marshal(map[string]any{"conditions": conds})
	if err != nil {
		return err
	}
	if _, err := o.Streams.Out.Write(report); err != nil {
		return err
	}
	if produceErr != nil {
		return produceErr
	}
	for _, c := range out.Conditions {
		if c.Type == configv1alpha1.DownstreamEnsuredCondition && c.Status != "True" {
			return fmt.Errorf("the downstream is not ensured: %s", c.Message)
		}
	}
	if depsCond != nil && (depsCond.Reason == pkgdeps.DependenciesUnsatisfiableReason || depsCond.Reason == pkgdeps.DependencyConflictReason) {
		return fmt.Errorf("the dependencies cannot be met: %s", depsCond.Message)
	}
	return nil
}

// checkDependencies resolves the variant's package (the upstream folder,
// with its own declaration) into --installed with --catalog, and returns
// the DependenciesReady condition the controller would set.
func (o *PvRenderOptions) checkDependencies(pv *configv1alpha1.PackageVariant, up *pkg.Package) (metav1.Condition, error) {
	cond := metav1.Condition{Type: configv1alpha1.DependenciesReadyCondition, Status: metav1.ConditionFalse, Reason: pkgdeps.DependenciesUnsatisfiableReason}
	catalog, err := deps.LoadCatalog(o.Catalog)
	if err != nil {
		return cond, fmt.Errorf("--catalog: %w", err)
	}
	var installed []deps.Installed
	if o.Installed != "" {
		if installed, err = deps.LoadInstalled(o.Installed); err != nil {
			return cond, fmt.Errorf("--installed: %w", err)
		}
	}
	decl, err := deps.ParsePackage(up)
	if err != nil {
		cond.Message = fmt.Sprintf("the upstream package cannot be read: %v", err)
		return cond, nil
	}
	spec := configv1alpha1.Dependencies{}
	if pv.Spec.Dependencies != nil {
		spec = *pv.Spec.Dependencies
	}
	v := pkgdeps.Variant{Catalog: pkgdeps.OfflineCatalog(catalog), Installed: pkgdeps.OfflineInstalled(installed), Spec: spec, Decl: decl}
	if pv.Spec.Upstream != nil {
		v.Package = pv.Spec.Upstream.Package
	}
	if pv.Spec.Downstream != nil {
		v.Self = pv.Spec.Downstream.Package
	}
	res, err := pkgdeps.Resolve(v)
	if err != nil {
		cond.Message = pkgdeps.Explain(err, nil)
		return cond, nil
	}
	a := pkgdeps.Assess(res.Needs, spec.Install, nil)
	cond.Reason, cond.Message = a.Reason, a.Message
	if a.Ready {
		cond.Status = metav1.ConditionTrue
	}
	return cond, nil
}

// upstreamRef is the git ref a PackageVariant's upstream names.
func upstreamRef(u *configv1alpha1.Upstream) string {
	switch {
	case u.Revision != "":
		return u.Package + "/" + u.Revision.Ref()
	case u.Tag != "":
		return u.Package + "/" + u.Tag
	case u.VersionRange != "":
		return u.Package + "@" + u.VersionRange
	default:
		return "drafts/" + u.Package + "/" + u.WorkspaceName
	}
}
