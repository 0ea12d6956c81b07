// Command image builds Scion's container image without a daemon or a base
// image (internal/image):
//
//	go run ./hack/image push --image REGISTRY/scion:TAG [--insecure]
//
// builds the scion command of this module and pushes the image (make
// image does); and
//
//	go run ./hack/image rootfs --binary /out/scion DIR
//
// writes the same root filesystem into DIR, which the Dockerfile copies
// onto scratch.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/scion-dev/scion/internal/image"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: image push --image REF [--insecure] | image rootfs --binary FILE DIR")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	ref := fs.String("image", "", "the image reference to push to (registry/repository:tag)")
	insecure := fs.Bool("insecure", false, "speak plain HTTP to the registry")
	binary := fs.String("binary", "", "the scion binary to put in the image (push: built from this module when empty)")
	version := fs.String("version", "", "the version stamped into the binary it builds")
	caCerts := fs.String("ca-certificates", image.DefaultCACertificates, "the CA certificates to put in the image")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "rootfs":
		if *binary == "" || fs.NArg() != 1 {
			return fmt.Errorf("usage: image rootfs --binary FILE DIR")
		}
		bin, err := os.ReadFile(*binary)
		if err != nil {
			return err
		}
		certs, err := os.ReadFile(*caCerts)
		if err != nil {
			return fmt.Errorf("reading the CA certificates (--ca-certificates): %w", err)
		}
		return image.WriteDir(fs.Arg(0), image.RootFS(bin, certs))
	case "push":
		if *ref == "" {
			return fmt.Errorf("--image is required (REGISTRY/scion:TAG)")
		}
		if *binary == "" {
			dir, err := os.MkdirTemp("", "scion-image")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			*binary = filepath.Join(dir, "scion")
			if err := image.BuildBinary(context.Background(), ".", *binary, *version); err != nil {
				return err
			}
		}
		img, err := image.ForBinary(*binary, *caCerts, *version)
		if err != nil {
			return err
		}
		pushed, err := image.Push(img, *ref, *insecure)
		if err != nil {
			return err
		}
		fmt.Println(pushed)
		return nil
	default:
		return fmt.Errorf("unknown command %q: push or rootfs", args[0])
	}
}
