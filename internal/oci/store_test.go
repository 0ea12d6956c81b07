package oci_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/scion-dev/scion/internal/oci"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/registry"
	"github.com/scion-dev/scion/internal/testutil/storetest"
)

// The behaviour every store keeps (internal/testutil/storetest), for an
// OCI registry with TLS and htpasswd: each handle is a Store of its own
// on one prefix.
func TestStore_conformance(t *testing.T) {
	reg := registry.Start(t)
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, reg.Password))
	var n atomic.Int32
	storetest.Run(t, func(t *testing.T) storetest.Open {
		prefix := fmt.Sprintf("%s/conformance-%d", reg.Host, n.Add(1))
		return func(t *testing.T) store.Store {
			st, err := oci.OpenStore(context.Background(), oci.StoreOptions{Prefix: prefix, Options: oci.Options{Transport: reg.Transport}})
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
	})
}
