package rollout

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

func fleet(n int) []Target {
	var out []Target
	for i := n; i >= 1; i-- { // out of order: the plan sorts
		region := "us"
		if i%3 == 0 {
			region = "eu"
		}
		repo := fmt.Sprintf("cluster-%02d", i)
		out = append(out, Target{Repository: repo, Labels: map[string]string{"region": region}, Revisions: []string{repo + ".app.v2"}})
	}
	return out
}

func names(p Plan) map[string][]string {
	out := map[string][]string{}
	for _, w := range p.Waves {
		out[w.Name] = w.Targets
	}
	return out
}

func TestCompute(t *testing.T) {
	eu := &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}
	for _, tc := range []struct {
		name  string
		waves []configv1alpha1.RolloutWave
		n     int
		want  []Wave
	}{
		{"canary, a quarter, the rest", []configv1alpha1.RolloutWave{
			{Name: "canary", MaxTargets: ptr.To[int32](1)},
			{Name: "quarter", Percent: ptr.To[int32](25)},
		}, 12, []Wave{
			{Name: "canary", Targets: []string{"cluster-01"}},
			{Name: "quarter", Targets: []string{"cluster-02", "cluster-03", "cluster-04"}},
			{Name: "remainder", Targets: []string{"cluster-05", "cluster-06", "cluster-07", "cluster-08", "cluster-09", "cluster-10", "cluster-11", "cluster-12"}},
		}},
		{"region by region; percent rounds up and counts all targets", []configv1alpha1.RolloutWave{
			{Name: "eu-first", RepositorySelector: eu, Percent: ptr.To[int32](10)},
			{Name: "eu", RepositorySelector: eu},
			{Name: "us"},
		}, 12, []Wave{
			{Name: "eu-first", Targets: []string{"cluster-03", "cluster-06"}},
			{Name: "eu", Targets: []string{"cluster-09", "cluster-12"}},
			{Name: "us", Targets: []string{"cluster-01", "cluster-02", "cluster-04", "cluster-05", "cluster-07", "cluster-08", "cluster-10", "cluster-11"}},
		}},
		{"a wave with no target stays in the plan; no remainder when nothing is left", []configv1alpha1.RolloutWave{
			{Name: "all"},
			{Name: "empty", RepositorySelector: eu},
		}, 3, []Wave{
			{Name: "all", Targets: []string{"cluster-01", "cluster-02", "cluster-03"}},
			{Name: "empty", Targets: []string{}},
		}},
		{"percent of one target is one", []configv1alpha1.RolloutWave{{Name: "one", Percent: ptr.To[int32](1)}}, 1, []Wave{{Name: "one", Targets: []string{"cluster-01"}}}},
		{"no waves: everything is the remainder", nil, 2, []Wave{{Name: "remainder", Targets: []string{"cluster-01", "cluster-02"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			plan, err := Compute(&configv1alpha1.PackageRolloutSpec{Waves: tc.waves}, fleet(tc.n))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(plan.Waves).To(HaveLen(len(tc.want)))
			seen := map[string]bool{}
			for i, w := range plan.Waves {
				g.Expect(w.Name).To(Equal(tc.want[i].Name))
				g.Expect(w.Targets).To(Equal(tc.want[i].Targets), w.Name)
				g.Expect(w.Revisions).To(HaveLen(len(w.Targets)))
				for _, target := range w.Targets {
					g.Expect(seen).NotTo(HaveKey(target), "a target is in exactly one wave")
					seen[target] = true
				}
			}
			g.Expect(seen).To(HaveLen(tc.n))
		})
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		spec configv1alpha1.PackageRolloutSpec
		want string
	}{
		{configv1alpha1.PackageRolloutSpec{Waves: []configv1alpha1.RolloutWave{{Name: "a", MaxTargets: ptr.To[int32](1), Percent: ptr.To[int32](5)}}}, "spec.waves[0]: Invalid value: \"maxTargets and percent\": a wave has at most one size"},
		{configv1alpha1.PackageRolloutSpec{Waves: []configv1alpha1.RolloutWave{{Name: "a", Percent: ptr.To[int32](101)}}}, "spec.waves[0].percent: Invalid value: 101: must be from 1 to 100"},
		{configv1alpha1.PackageRolloutSpec{Waves: []configv1alpha1.RolloutWave{{Name: "a", Percent: ptr.To[int32](0)}}}, "spec.waves[0].percent: Invalid value: 0"},
		{configv1alpha1.PackageRolloutSpec{Waves: []configv1alpha1.RolloutWave{{Name: "a"}, {Name: "a"}}}, "spec.waves[1].name: Duplicate value: \"a\""},
		{configv1alpha1.PackageRolloutSpec{Waves: []configv1alpha1.RolloutWave{{Name: "remainder"}}}, "spec.waves[0].name: Invalid value: \"remainder\""},
		{configv1alpha1.PackageRolloutSpec{Waves: []configv1alpha1.RolloutWave{{Name: "a", MaxTargets: ptr.To[int32](0)}}}, "spec.waves[0].maxTargets: Invalid value: 0"},
		{configv1alpha1.PackageRolloutSpec{ApprovedWaves: []string{"nope"}}, "spec.approvedWaves[0]: Not found: \"nope\""},
		{configv1alpha1.PackageRolloutSpec{RevisionSelector: metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}}}, "spec.revisionSelector: Invalid value"},
	} {
		errs := Validate(&tc.spec)
		NewWithT(t).Expect(errs.ToAggregate()).To(MatchError(ContainSubstring(tc.want)))
		_, err := Compute(&tc.spec, fleet(2))
		NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tc.want)), "no plan for an invalid spec")
	}
}
