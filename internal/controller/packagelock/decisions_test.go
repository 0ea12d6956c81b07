package packagelock

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

func TestLocked(t *testing.T) {
	now := metav1.Now()
	git := &configv1alpha1.GitRepository{Repo: "https://example.com/cluster.git"}
	for name, tc := range map[string]struct {
		repo configv1alpha1.Repository
		want bool
	}{
		"a deployment repository":           {configv1alpha1.Repository{Spec: configv1alpha1.RepositorySpec{Deployment: true, Git: git}}, true},
		"a catalog":                         {configv1alpha1.Repository{Spec: configv1alpha1.RepositorySpec{Git: git}}, false},
		"being deleted (the lock goes too)": {configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Spec: configv1alpha1.RepositorySpec{Deployment: true, Git: git}}, false},
		"without git":                       {configv1alpha1.Repository{Spec: configv1alpha1.RepositorySpec{Deployment: true}}, false},
	} {
		t.Run(name, func(t *testing.T) { NewWithT(t).Expect(locked(&tc.repo)).To(Equal(tc.want)) })
	}
}

func TestLivePlanned(t *testing.T) {
	planned := func() []configv1alpha1.LockedPackage {
		return []configv1alpha1.LockedPackage{
			{Name: "crds", State: configv1alpha1.LockedPlanned, PlannedBy: []string{"a", "gone"}},
			{Name: "lib", State: configv1alpha1.LockedPlanned, PlannedBy: []string{"gone"}},
			{Name: "base", State: configv1alpha1.LockedPlanned, PlannedBy: []string{"b", "a"}},
		}
	}
	asked := map[string]int{}
	exists := func(name string) (bool, error) {
		asked[name]++
		return name != "gone", nil
	}
	g := NewWithT(t)
	got, err := livePlanned(planned(), exists)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal([]configv1alpha1.LockedPackage{
		{Name: "crds", State: configv1alpha1.LockedPlanned, PlannedBy: []string{"a"}},
		{Name: "base", State: configv1alpha1.LockedPlanned, PlannedBy: []string{"b", "a"}},
	}), "a deleted variant plans nothing; a package no live variant plans goes")
	g.Expect(asked).To(Equal(map[string]int{"a": 1, "gone": 1, "b": 1}), "each variant is looked up once")

	_, err = livePlanned(planned(), func(string) (bool, error) { return false, errors.New("the API server is gone") })
	g.Expect(err).To(MatchError("the API server is gone"), "a failed lookup is not taken for a deleted variant")
}

func TestNewConflicts(t *testing.T) {
	widget := configv1alpha1.LockConflict{Kind: "example.com/v1/Widget", Message: "kind example.com/v1/Widget is provided by widgets and widgets-legacy"}
	ns := configv1alpha1.LockConflict{Package: "tenant-ns", Message: "package tenant-ns is at two versions"}
	for name, tc := range map[string]struct {
		before, after, want []configv1alpha1.LockConflict
	}{
		"none":                        {nil, nil, nil},
		"a new one is announced":      {nil, []configv1alpha1.LockConflict{widget}, []configv1alpha1.LockConflict{widget}},
		"a standing one is not":       {[]configv1alpha1.LockConflict{widget}, []configv1alpha1.LockConflict{widget, ns}, []configv1alpha1.LockConflict{ns}},
		"a resolved one says nothing": {[]configv1alpha1.LockConflict{widget}, nil, nil},
	} {
		t.Run(name, func(t *testing.T) { NewWithT(t).Expect(newConflicts(tc.before, tc.after)).To(Equal(tc.want)) })
	}
}
