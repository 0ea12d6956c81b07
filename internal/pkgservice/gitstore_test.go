package pkgservice

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

// gitStore opens a store on a new bare git repository named name, with a
// cache of its own.
func gitStore(t *testing.T, name string) *store.Repository {
	t.Helper()
	bare := gitserver.InitBare(t, t.TempDir(), name)
	st, err := store.Open(context.Background(), store.Options{URL: "file://" + bare, CreateBranch: true, CacheDir: filepath.Join(t.TempDir(), "c")})
	if err != nil {
		t.Fatal(err)
	}
	return st
}
