package store_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
	"github.com/scion-dev/scion/internal/testutil/storetest"
)

// The behaviour every store keeps (internal/testutil/storetest), for git:
// each handle is a mirror of its own of one bare repository.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Open {
		url := "file://" + gitserver.InitBare(t, t.TempDir(), "repo.git")
		return func(t *testing.T) store.Store {
			r, err := store.Open(context.Background(), store.Options{URL: url, CreateBranch: true, CacheDir: filepath.Join(t.TempDir(), "cache")})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
	})
}
