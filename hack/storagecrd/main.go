// Command storagecrd writes config/crd/bases/internal.scion.dev_packagerevisions.yaml,
// Scion's storage of package revisions, from the porch.kpt.dev
// PackageRevision CustomResourceDefinition controller-gen generates
// (make generate runs it).
package main

import (
	"fmt"
	"os"

	"github.com/scion-dev/scion/config/crd"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "storagecrd:", err)
		os.Exit(1)
	}
}

func run() error {
	src, err := os.ReadFile("config/crd/bases/porch.kpt.dev_packagerevisions.yaml")
	if err != nil {
		return err
	}
	out, err := crd.DeriveStorage(src)
	if err != nil {
		return err
	}
	return os.WriteFile("config/crd/bases/internal.scion.dev_packagerevisions.yaml", out, 0o644)
}
