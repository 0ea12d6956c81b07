package repository

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

// A cluster is read often while something of it moves or changed in the
// last minutes (a Kustomization made after the publication), seldom once
// all is settled, and often while it cannot be read.
func TestClusterReconciler_next(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	c := &clusterReconciler{Poll: 5 * time.Second, Idle: time.Minute}
	pkg := func(state configv1alpha1.DeployState, since time.Duration) configv1alpha1.DeployedPackage {
		return configv1alpha1.DeployedPackage{Package: "app", State: state, Since: &metav1.Time{Time: now.Add(-since)}}
	}
	for _, tc := range []struct {
		name string
		st   configv1alpha1.ClusterStatus
		want time.Duration
	}{
		{"settled", configv1alpha1.ClusterStatus{Packages: []configv1alpha1.DeployedPackage{pkg(configv1alpha1.DeployCurrent, time.Second)}}, time.Minute},
		{"progressing", configv1alpha1.ClusterStatus{Packages: []configv1alpha1.DeployedPackage{pkg(configv1alpha1.DeployCurrent, time.Hour), pkg(configv1alpha1.DeployProgressing, time.Hour)}}, 5 * time.Second},
		{"behind", configv1alpha1.ClusterStatus{Packages: []configv1alpha1.DeployedPackage{pkg(configv1alpha1.DeployBehind, time.Hour)}}, 5 * time.Second},
		{"failed", configv1alpha1.ClusterStatus{Packages: []configv1alpha1.DeployedPackage{pkg(configv1alpha1.DeployFailed, time.Hour)}}, 5 * time.Second},
		{"not deployed yet, just published", configv1alpha1.ClusterStatus{Packages: []configv1alpha1.DeployedPackage{pkg(configv1alpha1.DeployNotDeployed, time.Minute)}}, 5 * time.Second},
		{"never deployed", configv1alpha1.ClusterStatus{Packages: []configv1alpha1.DeployedPackage{pkg(configv1alpha1.DeployNotDeployed, time.Hour)}}, time.Minute},
		{"drifted for long", configv1alpha1.ClusterStatus{Packages: []configv1alpha1.DeployedPackage{pkg(configv1alpha1.DeployDrifted, time.Hour)}}, time.Minute},
		{"unreachable", configv1alpha1.ClusterStatus{Error: "dial tcp: i/o timeout", Packages: []configv1alpha1.DeployedPackage{pkg(configv1alpha1.DeployUnknown, time.Hour)}}, 5 * time.Second},
	} {
		if got := c.next(&tc.st, now); got != tc.want {
			t.Errorf("%s: next = %s, want %s", tc.name, got, tc.want)
		}
	}
}
