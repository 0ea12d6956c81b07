package kptfile

import (
	"testing"

	. "github.com/onsi/gomega"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
)

const sample = `# The blueprint for a tenant namespace.
apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: tenant # keep this name
  annotations:
    config.kubernetes.io/local-config: "true"
info:
  description: a namespace per tenant
  readinessGates:
  - conditionType: example.com/approved
pipeline:
  mutators:
  # sets the namespace everywhere
  - image: gcr.io/kpt-fn/set-namespace:v0.4
    configMap:
      namespace: tenant
custom: field kept
`

func TestEdit(t *testing.T) {
	g := NewWithT(t)

	// A no-op edit returns the input byte for byte.
	out, err := Edit([]byte(sample), func(*kptfilev1.KptFile) error { return nil })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(Equal(sample))

	// Setting the upstream lock keeps comments and unknown fields elsewhere.
	out, err = Edit([]byte(sample), func(kf *kptfilev1.KptFile) error {
		kf.UpstreamLock = &kptfilev1.UpstreamLock{Type: kptfilev1.GitOrigin, Git: &kptfilev1.GitLock{Repo: "file:///r", Ref: "tenant/v1", Commit: "abc"}}
		kf.Status = &kptfilev1.Status{Conditions: []kptfilev1.Condition{{Type: "Ready", Status: kptfilev1.ConditionTrue}}}
		return nil
	})
	g.Expect(err).NotTo(HaveOccurred())
	s := string(out)
	g.Expect(s).To(ContainSubstring("# The blueprint for a tenant namespace."))
	g.Expect(s).To(ContainSubstring("name: tenant # keep this name"))
	g.Expect(s).To(ContainSubstring("# sets the namespace everywhere"))
	g.Expect(s).To(ContainSubstring("custom: field kept"))
	kf, err := Parse(out)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kf.UpstreamLock.Git.Commit).To(Equal("abc"))
	g.Expect(kf.Status.Conditions).To(HaveLen(1))
	g.Expect(kf.Info.ReadinessGates).To(Equal([]kptfilev1.ReadinessGate{{ConditionType: "example.com/approved"}}))

	// Renaming the package keeps the other metadata and clearing a section removes it.
	out, err = Edit(out, func(kf *kptfilev1.KptFile) error {
		kf.Metadata.Name = "tenant-a"
		kf.Pipeline = nil
		return nil
	})
	g.Expect(err).NotTo(HaveOccurred())
	kf, err = Parse(out)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kf.Metadata.Name).To(Equal("tenant-a"))
	g.Expect(kf.Metadata.Annotations).To(HaveKeyWithValue("config.kubernetes.io/local-config", "true"))
	g.Expect(kf.Pipeline).To(BeNil())
	g.Expect(string(out)).NotTo(ContainSubstring("set-namespace"))
}

func TestParse_errors(t *testing.T) {
	g := NewWithT(t)
	_, err := Parse([]byte("apiVersion: v1\nkind: ConfigMap\n"))
	g.Expect(err).To(MatchError(ContainSubstring(`apiVersion/kind is "v1"/"ConfigMap"`)))
	_, err = Parse([]byte("apiVersion: kpt.dev/v1\nkind: Kptfile\npipeline: [\n"))
	g.Expect(err).To(MatchError(ContainSubstring("parsing Kptfile")))
}

func TestMarshal_fieldOrder(t *testing.T) {
	g := NewWithT(t)
	kf := New("app")
	kf.Upstream = &kptfilev1.Upstream{Type: kptfilev1.GitOrigin, Git: &kptfilev1.Git{Repo: "file:///r", Ref: "app/v1"}, UpdateStrategy: kptfilev1.ResourceMerge}
	out, err := Marshal(kf)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(Equal("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\nupstream:\n  type: git\n  git:\n    repo: file:///r\n    ref: app/v1\n  updateStrategy: resource-merge\n"))
	back, err := Parse(out)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(back).To(Equal(kf))
}
