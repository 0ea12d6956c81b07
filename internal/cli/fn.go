package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/engine"
	"github.com/scion-dev/scion/internal/fn/builtin"
	"github.com/scion-dev/scion/internal/pkg"
)

// NewCmdFn returns `scion fn`, the function commands.
func NewCmdFn(streams Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fn",
		Short: "Run KRM function pipelines",
	}
	cmd.AddCommand(NewCmdFnRender(streams), newCmdFnWrapper(streams))
	return cmd
}

// FnRenderOptions are the options of `scion fn render`.
type FnRenderOptions struct {
	Streams
	Dir         string
	AllowExec   bool
	ResultsOnly bool
}

// NewCmdFnRender returns `scion fn render DIR`.
func NewCmdFnRender(streams Streams) *cobra.Command {
	o := &FnRenderOptions{Streams: streams}
	cmd := &cobra.Command{
		Use:   "render DIR",
		Short: "Run the Kptfile pipelines of the package in DIR and write the result back",
		Long: `Run the Kptfile pipelines of the package in DIR (subpackages first) and write the
result back, with status.renderStatus and a Rendered condition in the Kptfile.
Builtin functions (matched by image name) run in process; exec functions run
only with --allow-exec; other images need docker, podman or nerdctl. When a
function fails, DIR is left unchanged (unless the Kptfile is annotated
kpt.dev/save-on-render-failure: "true") and the command exits non-zero.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Dir = args[0]
			return o.Run(cmdContext(cmd))
		},
	}
	cmd.Flags().BoolVar(&o.AllowExec, "allow-exec", false, "allow exec functions (local executables named by the package)")
	return cmd
}

// Run renders.
func (o *FnRenderOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	in, err := pkg.ReadDir(o.Dir)
	if err != nil {
		return err
	}
	rt := builtin.NewRuntime()
	rt.DisableExec = !o.AllowExec
	out, status, renderErr := engine.Render(ctx, in, rt)
	if status != nil {
		printSteps(o, status)
	}
	if out != nil && !out.Equal(in) {
		if err := out.WriteDir(o.Dir); err != nil {
			return err
		}
	}
	if renderErr != nil {
		return renderErr
	}
	changes, err := engine.Diff(in, out)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "rendered %s\n", o.Dir)
	return printChanges(o.Out, changes)
}

func printSteps(o *FnRenderOptions, st *kptfilev1.RenderStatus) {
	print := func(kind string, steps []kptfilev1.StepResult) {
		for _, s := range steps {
			what := s.Image
			if what == "" {
				what = s.Exec
			}
			if s.Name != "" {
				what = s.Name + " (" + what + ")"
			}
			state := "ok"
			if s.Error != "" {
				state = "failed"
			}
			fmt.Fprintf(o.Out, "%s %s: %s\n", kind, what, state)
			for _, r := range s.Results {
				ref := ""
				if r.ResourceRef != "" {
					ref = " [" + r.ResourceRef + "]"
				}
				fmt.Fprintf(o.Out, "  %s: %s%s\n", r.Severity, r.Message, ref)
			}
			if s.Stderr != "" {
				fmt.Fprintf(o.Out, "  stderr: %s\n", s.Stderr)
			}
		}
	}
	print("mutator", st.MutationSteps)
	print("validator", st.ValidationSteps)
}
