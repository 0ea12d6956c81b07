package rpkg

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

func rev(name, repo, pkg string, revision int, lifecycle porchv1alpha1.Lifecycle, commit string) *porchv1alpha1.PackageRevision {
	return &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{porchv1alpha1.LifecycleLabel: string(lifecycle)}},
		Spec:       porchv1alpha1.PackageRevisionSpec{Repository: repo, PackageName: pkg, Revision: revision, Lifecycle: lifecycle},
		Status:     porchv1alpha1.PackageRevisionStatus{Commit: commit},
	}
}

// A revision's base found in a view of the namespace is the one a list
// finds: the newest published revision of its package in its repository
// before it; and a remembered diff is found again only while both commits
// are the same.
func TestDiffSource(t *testing.T) {
	all := []*porchv1alpha1.PackageRevision{
		rev("r1.app.v1", "r1", "app", 1, porchv1alpha1.LifecyclePublished, "c1"),
		rev("r1.app.v2", "r1", "app", 2, porchv1alpha1.LifecyclePublished, "c2"),
		rev("r1.app.v3", "r1", "app", 3, porchv1alpha1.LifecyclePublished, "c3"),
		rev("r2.app.v9", "r2", "app", 9, porchv1alpha1.LifecyclePublished, "c9"),
		rev("r1.other.v5", "r1", "other", 5, porchv1alpha1.LifecyclePublished, "c5"),
		rev("r1.app.draft", "r1", "app", 0, porchv1alpha1.LifecycleDraft, "cd"),
		rev("r2.new.draft", "r2", "new", 0, porchv1alpha1.LifecycleDraft, "cn"),
	}
	for name, want := range map[string]string{"r1.app.draft": "r1.app.v3", "r1.app.v3": "r1.app.v2", "r1.app.v1": "", "r2.new.draft": ""} {
		var pr *porchv1alpha1.PackageRevision
		for _, r := range all {
			if r.Name == name {
				pr = r
			}
		}
		if got := previousPublished(pr, all); got != want {
			t.Errorf("base of %s = %q, want %q", name, got, want)
		}
	}

	src := DiffSource{Revisions: all, Memo: NewDiffMemo(2)}
	draft := all[5]
	k := src.memoKey(draft, "r1.app.v3")
	if k == "" {
		t.Fatal("no key for two known commits")
	}
	src.Memo.put(k, &RevisionDiff{Revision: draft.Name})
	if _, ok := src.Memo.get(k); !ok {
		t.Error("a remembered diff was not found")
	}
	moved := rev("r1.app.draft", "r1", "app", 0, porchv1alpha1.LifecycleDraft, "cd2")
	if _, ok := src.Memo.get(src.memoKey(moved, "r1.app.v3")); ok {
		t.Error("a draft with a new commit found its old diff")
	}
	if src.memoKey(draft, "r9.gone.v1") != "" {
		t.Error("a base of unknown commit has a key")
	}
	src.Memo.put("b", &RevisionDiff{})
	src.Memo.put("c", &RevisionDiff{})
	if _, ok := src.Memo.get(k); ok {
		t.Error("the memo kept more than its size")
	}
}
