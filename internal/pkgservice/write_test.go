package pkgservice

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

// A draft write whose answer was lost is recognised by its retry, from a
// mirror that has not seen it: the same revision, not "workspace taken".
// Another object's draft in the workspace is still refused.
func TestCreateDraft_lostAnswer(t *testing.T) {
	ctx := context.Background()
	bare := gitserver.InitBare(t, t.TempDir(), "pkgs.git")
	open := func() *store.Repository {
		r, err := store.Open(ctx, store.Options{URL: "file://" + bare, CreateBranch: true, CacheDir: filepath.Join(t.TempDir(), "c")})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	retrying, answered := open(), open()
	pr := &porchv1alpha1.PackageRevision{ObjectMeta: metav1.ObjectMeta{Name: "hello-first", Namespace: "ns", UID: "uid-1"},
		Spec: porchv1alpha1.PackageRevisionSpec{PackageName: "hello", WorkspaceName: "ws1"}}
	contents := pkg.New(map[string][]byte{"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: hello\n")})
	// The write that reached git (its answer lost to the other mirror).
	first, err := (&Service{}).CreateDraft(ctx, answered, pr, contents, "Create hello")
	if err != nil {
		t.Fatal(err)
	}
	got, err := (&Service{}).CreateDraft(ctx, retrying, pr, contents, "Create hello")
	if err != nil {
		t.Fatalf("the retry: %v", err)
	}
	if got.Commit != first.Commit {
		t.Fatalf("the retry wrote %s, the first write %s", got.Commit, first.Commit)
	}
	other := pr.DeepCopy()
	other.Name, other.UID = "hello-second", "uid-2"
	if _, err := (&Service{}).CreateDraft(ctx, open(), other, contents, "Create hello"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("another object's write in the same workspace: %v", err)
	}
}
