package packagerollout

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

// TestObserved: a revision counts as published once git has it so, not
// when someone asked for it: a publication the PackageRevision controller
// has seen and refused (its dependencies gate holds it) is still Proposed,
// so the rollout keeps its wave open and publishes the dependencies.
func TestObserved(t *testing.T) {
	pr := func(spec porchv1alpha1.Lifecycle, inGit string, observed int64) *porchv1alpha1.PackageRevision {
		p := &porchv1alpha1.PackageRevision{ObjectMeta: metav1.ObjectMeta{Name: "cluster-01.app.ws", Generation: 3}}
		p.Spec.Lifecycle = spec
		p.Status.ObservedGeneration = observed
		if inGit != "" {
			p.Labels = map[string]string{porchv1alpha1.LifecycleLabel: inGit}
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pr   *porchv1alpha1.PackageRevision
		want porchv1alpha1.Lifecycle
	}{
		{"published in git", pr(porchv1alpha1.LifecyclePublished, "Published", 3), porchv1alpha1.LifecyclePublished},
		{"asked for, not seen yet", pr(porchv1alpha1.LifecyclePublished, "Proposed", 2), porchv1alpha1.LifecycleProposed},
		{"asked for, seen and refused", pr(porchv1alpha1.LifecyclePublished, "Proposed", 3), porchv1alpha1.LifecycleProposed},
		{"proposed", pr(porchv1alpha1.LifecycleProposed, "Proposed", 3), porchv1alpha1.LifecycleProposed},
		{"not shown yet", pr(porchv1alpha1.LifecyclePublished, "", 3), porchv1alpha1.LifecyclePublished},
	} {
		if got := observed(tc.pr, nil).Lifecycle; got != tc.want {
			t.Errorf("%s: lifecycle %s, want %s", tc.name, got, tc.want)
		}
	}
}
