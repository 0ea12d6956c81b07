package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/scion-dev/scion/internal/fn"
	"github.com/scion-dev/scion/internal/fn/podrunner"
)

// newCmdFnWrapper returns `scion fn wrapper`, what the function runner
// runs in a function's Pod: install (in an init container of Scion's
// image) copies this binary into a volume the function's container
// mounts; serve (there, in front of the function's entrypoint) takes
// ResourceLists over HTTP and runs the entrypoint on each.
func newCmdFnWrapper(streams Streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:    "wrapper",
		Short:  "Serve a KRM function's executable over HTTP, in the function runner's Pods",
		Hidden: true,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "install DIR",
		Short: "Copy this binary into DIR as " + podrunner.WrapperBinary,
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return installWrapper(args[0])
		},
	})
	var listen string
	serve := &cobra.Command{
		Use:   "serve -- COMMAND [ARG...]",
		Short: "Serve COMMAND (the function's entrypoint) over HTTP",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			token := os.Getenv(podrunner.TokenEnv)
			if token == "" {
				return fmt.Errorf("%s is not set: the wrapper serves only callers with its token", podrunner.TokenEnv)
			}
			l, err := net.Listen("tcp", listen)
			if err != nil {
				return err
			}
			fmt.Fprintf(streams.ErrOut, "serving %s on %s\n", args[0], l.Addr())
			srv := &http.Server{Handler: fn.WrapperHandler(&fn.Exec{Path: args[0], Args: args[1:]}, token), ReadHeaderTimeout: 10 * time.Second}
			ctx := cmdContext(cmd)
			if ctx == nil {
				ctx = context.Background()
			}
			go func() {
				<-ctx.Done()
				_ = srv.Close()
			}()
			if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	serve.Flags().StringVar(&listen, "listen", ":9446", "the address to serve on")
	cmd.AddCommand(serve)
	return cmd
}

// installWrapper copies the running binary into dir.
func installWrapper(dir string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	in, err := os.Open(self)
	if err != nil {
		return err
	}
	defer in.Close()
	dst := filepath.Join(dir, podrunner.WrapperBinary)
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return fmt.Errorf("copying %s to %s: %w", self, dst, err)
	}
	return out.Close()
}
