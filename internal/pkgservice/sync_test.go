package pkgservice

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
)

// TestKptfileFacts_perRevision: the facts shown of a draft follow its
// latest commit, and a draft written again and again keeps one entry in
// the cache, not one per commit it ever had.
func TestKptfileFacts_perRevision(t *testing.T) {
	ctx := context.Background()
	repo := gitStore(t, "pkgs.git")
	kptfile := func(gate string) *pkg.Package {
		return pkg.New(map[string][]byte{"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: hello\ninfo:\n  readinessGates:\n  - conditionType: " + gate + "\n")})
	}
	repoA := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: types.UID("uid-a")}}
	repoB := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", UID: types.UID("uid-b")}}
	s := &Service{}
	var last string
	for i, gate := range []string{"one", "two", "three"} {
		rev, err := repo.WriteDraft(ctx, store.DraftWrite{Package: "hello", Workspace: "ws", Contents: kptfile(gate), Expected: last})
		if err != nil {
			t.Fatal(err)
		}
		last = rev.Commit
		f, err := s.kptfileFacts(ctx, repoA, repo, rev)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.gates) != 1 || f.gates[0].ConditionType != gate {
			t.Fatalf("write %d: facts show gates %v, the commit has %q", i, f.gates, gate)
		}
		if len(s.facts) != 1 {
			t.Fatalf("write %d: %d cached facts for one draft", i, len(s.facts))
		}
	}
	// The same package and workspace in another Repository is another
	// revision.
	rev, err := repo.Get(ctx, "hello", "ws", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.kptfileFacts(ctx, repoB, repo, rev); err != nil {
		t.Fatal(err)
	}
	if len(s.facts) != 2 {
		t.Fatalf("%d cached facts for two repositories' drafts", len(s.facts))
	}
}
