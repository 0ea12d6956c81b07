package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
)

const rolloutYAML = `apiVersion: config.porch.kpt.dev/v1alpha1
kind: PackageRollout
metadata:
  name: app-v2
spec:
  revisionSelector:
    matchLabels: {app: demo}
  waves:
  - name: canary
    maxTargets: 1
  - name: europe
    repositorySelector:
      matchLabels: {region: eu}
    percent: 50
`

func writeFleet(t *testing.T, dir string) {
	t.Helper()
	var repos, revs []string
	for i := 1; i <= 6; i++ {
		region := "us"
		if i%2 == 0 {
			region = "eu"
		}
		name := fmt.Sprintf("cluster-%02d", i)
		repos = append(repos, fmt.Sprintf("apiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nmetadata:\n  name: %s\n  labels: {region: %s}\nspec:\n  deployment: true\n  git: {repo: https://git.example.com/%s.git}\n", name, region, name))
		lc := "Proposed"
		if i == 5 {
			lc = "Draft" // not proposed: not a target
		}
		revs = append(revs, fmt.Sprintf("apiVersion: porch.kpt.dev/v1alpha1\nkind: PackageRevision\nmetadata:\n  name: %s.app.v2\n  labels: {app: demo}\nspec:\n  repository: %s\n  packageName: app\n  workspaceName: v2\n  lifecycle: %s\n", name, name, lc))
	}
	// The catalog the revisions come from: no deployment repository, no
	// target.
	repos = append(repos, "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nmetadata:\n  name: catalog\nspec:\n  git: {repo: https://git.example.com/catalog.git}\n")
	for f, docs := range map[string][]string{"repos.yaml": repos, "revs.yaml": revs} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "rollout.yaml"), []byte(rolloutYAML), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRolloutPlan(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	writeFleet(t, dir)
	out, err := runIn(t, dir, "rollout", "plan", "-f", "rollout.yaml", "--repositories", "repos.yaml")
	g.Expect(err).NotTo(HaveOccurred(), out)
	golden(t, "rollout-plan", out)

	out, err = runIn(t, dir, "rollout", "plan", "-f", "rollout.yaml", "--repositories", "repos.yaml", "--revisions", "revs.yaml", "-o", "json")
	g.Expect(err).NotTo(HaveOccurred(), out)
	var plan struct {
		Waves []struct {
			Name    string   `json:"name"`
			Targets []string `json:"targets"`
		} `json:"waves"`
	}
	g.Expect(json.Unmarshal([]byte(out), &plan)).To(Succeed(), out)
	g.Expect(plan.Waves).To(HaveLen(3))
	g.Expect(plan.Waves[0].Targets).To(Equal([]string{"cluster-01"}))
	g.Expect(plan.Waves[1].Targets).To(Equal([]string{"cluster-02", "cluster-04", "cluster-06"}), "50% of 5 targets is 3")
	g.Expect(plan.Waves[2].Name).To(Equal("remainder"))
	g.Expect(plan.Waves[2].Targets).To(Equal([]string{"cluster-03"}), "cluster-05's revision is a draft")
}

// A group rollout's plan shows each target's group, Drafts included
// (members the target waits for).
func TestRolloutPlan_group(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	writeFleet(t, dir)
	group := strings.Replace(rolloutYAML, "spec:\n", "spec:\n  group: {packageVariantSet: platform}\n", 1)
	g.Expect(os.WriteFile(filepath.Join(dir, "group.yaml"), []byte(group), 0o644)).To(Succeed())
	out, err := runIn(t, dir, "rollout", "plan", "-f", "group.yaml", "--repositories", "repos.yaml", "--revisions", "revs.yaml")
	g.Expect(err).NotTo(HaveOccurred(), out)
	golden(t, "rollout-plan-group", out)
	g.Expect(out).To(ContainSubstring("cluster-05.app.v2"), "a Draft is a member the target waits for")

	// Without revisions there are no groups to show: refused, saying why.
	out, err = runIn(t, dir, "rollout", "plan", "-f", "group.yaml", "--repositories", "repos.yaml")
	g.Expect(err).To(MatchError(ContainSubstring("PackageRollout app-v2 is a group rollout (spec.group): its targets are the groups of revisions its repositories hold; give them with --revisions")), out)
}

// Without revisions, only deployment repositories are targets; none is an
// error naming the files.
func TestRolloutPlan_deploymentRepositories(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	writeFleet(t, dir)
	out, err := runIn(t, dir, "rollout", "plan", "-f", "rollout.yaml", "--repositories", "repos.yaml", "-o", "json")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).NotTo(ContainSubstring("catalog"))
	g.Expect(os.WriteFile(filepath.Join(dir, "catalog.yaml"), []byte("apiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nmetadata:\n  name: catalog\nspec:\n  git: {repo: https://git.example.com/catalog.git}\n"), 0o644)).To(Succeed())
	out, err = runIn(t, dir, "rollout", "plan", "-f", "rollout.yaml", "--repositories", "catalog.yaml")
	g.Expect(err).To(MatchError("no deployment Repository (spec.deployment: true) in catalog.yaml: without --revisions the targets are those"), out)
}

func TestRolloutPlan_invalid(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	writeFleet(t, dir)
	bad := strings.Replace(rolloutYAML, "    maxTargets: 1\n", "    maxTargets: 1\n    percent: 10\n", 1)
	g.Expect(os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(bad), 0o644)).To(Succeed())
	out, err := runIn(t, dir, "rollout", "plan", "-f", "bad.yaml", "--repositories", "repos.yaml")
	g.Expect(err).To(MatchError(ContainSubstring("spec.waves[0]: Invalid value: \"maxTargets and percent\": a wave has at most one size")), out)
	// Durations: what Go cannot read, and what it reads but the CRD
	// refuses, are refused as at kubectl apply, naming the field.
	for _, tc := range []struct{ line, message string }{
		{"  progressDeadline: 10 minutes\n", `spec.progressDeadline: time: unknown unit " minutes" in duration "10 minutes"`},
		{"  progressDeadline: soon\n", `spec.progressDeadline: time: invalid duration "soon"`},
		{"  progressDeadline: 0s\n", `spec.progressDeadline: Invalid value: "0s": progressDeadline must be from 1s to 8760h`},
		{"  soakTime: -5m\n", `spec.soakTime: Invalid value: "-5m0s": soakTime must be from 0s to 8760h`},
	} {
		bad := strings.Replace(rolloutYAML, "spec:\n", "spec:\n"+tc.line, 1)
		g.Expect(os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(bad), 0o644)).To(Succeed())
		out, err := runIn(t, dir, "rollout", "plan", "-f", "bad.yaml", "--repositories", "repos.yaml")
		g.Expect(err).To(MatchError(ContainSubstring(tc.message)), out)
	}
	_, err = runIn(t, dir, "rollout", "plan", "-f", "rollout.yaml")
	g.Expect(err).To(MatchError("--repositories is required"))
	_, err = runIn(t, dir, "rollout", "plan", "-f", "rollout.yaml", "--repositories", "repos.yaml", "-o", "xml")
	g.Expect(err).To(MatchError(ContainSubstring("--output must be table, yaml or json")))
}

func TestPrintRolloutStatus(t *testing.T) {
	ro := &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "app-v2", Generation: 2}}
	ro.Status.ObservedGeneration = 2
	ro.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: "False", Reason: configv1alpha1.WaveProgressingReason}}
	ro.Status.Blocked = "wave europe: 1 of 3 published, 0 healthy: cluster-02 has no example.com/synced condition yet"
	ro.Status.Waves = []configv1alpha1.WaveStatus{
		{Name: "canary", State: configv1alpha1.WaveComplete, Targets: 1, Published: 1, Healthy: 1, StartedAt: &metav1.Time{Time: time.Unix(0, 0)}},
		{Name: "europe", State: configv1alpha1.WaveProgressing, Targets: 3, Published: 1, Dropped: 1},
		{Name: "remainder", State: configv1alpha1.WavePending, Targets: 1},
	}
	var b strings.Builder
	NewWithT(t).Expect(printRolloutStatus(&b, ro)).To(Succeed())
	golden(t, "rollout-status", b.String())
}

// The console listens on loopback addresses unless told otherwise.
func TestConsoleLoopback(t *testing.T) {
	g := NewWithT(t)
	for _, addr := range []string{"127.0.0.1:8080", "localhost:9000", "[::1]:8080"} {
		g.Expect(checkLoopback(addr, false)).To(Succeed(), addr)
	}
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "10.1.2.3:8080"} {
		g.Expect(checkLoopback(addr, false)).To(MatchError(ContainSubstring("is not a loopback address: whoever reaches it would act as you")), addr)
		g.Expect(checkLoopback(addr, true)).To(Succeed(), addr)
	}
	g.Expect(checkLoopback("nonsense", false)).To(MatchError(ContainSubstring(`--listen "nonsense"`)))
}
