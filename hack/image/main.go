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
// onto scratch; and
//
//	go run ./hack/image function --binary FILE --image REF [--insecure]
//
// pushes the image of a static KRM function executable
// (image.ForFunction): hack/catalog-functions.sh makes the kpt catalog's
// images with it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"

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
		return fmt.Errorf("usage: image push --image REF [--insecure] | image rootfs --binary FILE DIR | image function --binary FILE --image REF [--insecure]")
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
		return push(img, *ref, *insecure)
	case "function":
		if *binary == "" || *ref == "" {
			return fmt.Errorf("usage: image function --binary FILE --image REF [--insecure]")
		}
		img, err := image.ForFunction(*binary)
		if err != nil {
			return err
		}
		return push(img, *ref, *insecure)
	default:
		return fmt.Errorf("unknown command %q: push, rootfs or function", args[0])
	}
}

// push pushes img to ref and prints the reference by digest.
func push(img v1.Image, ref string, insecure bool) error {
	pushed, err := image.Push(img, ref, insecure)
	if err != nil {
		return err
	}
	fmt.Println(pushed)
	return nil
}
