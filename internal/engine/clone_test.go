package engine

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	"github.com/scion-dev/scion/internal/pkg"
)

func blueprint() *pkg.Package {
	return pkg.New(map[string][]byte{
		"Kptfile":        []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: base-ns # the blueprint\ninfo:\n  description: a namespace per tenant\n"),
		"namespace.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: example\n"),
		"quota.yaml":     []byte("apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: quota\n  namespace: example\nspec:\n  hard:\n    pods: \"10\"\n"),
		"README.md":      []byte("# base-ns\n"),
		"db/Kptfile":     []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: db\n"),
		"db/cm.yaml":     []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: db\ndata:\n  a: b\n"),
	})
}

var catalog = Origin{Repo: "https://git.example.com/catalog.git", Directory: "base-ns", Ref: "base-ns/v3", Commit: "abc123abc123abc123abc123abc123abc123abc1"}

func TestClone(t *testing.T) {
	g := NewWithT(t)
	up := blueprint()
	before := up.DeepCopy()
	p, err := Clone(up, catalog, CloneOptions{PackagePath: "tenants/tenant-a"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(up.Equal(before)).To(BeTrue(), "the upstream is not modified")

	kf, err := p.Kptfile()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kf.Metadata.Name).To(Equal("tenant-a"))
	g.Expect(kf.Upstream).To(Equal(&kptfilev1.Upstream{Type: "git", Git: &kptfilev1.Git{Repo: catalog.Repo, Directory: "base-ns", Ref: "base-ns/v3"}, UpdateStrategy: kptfilev1.ResourceMerge}))
	g.Expect(kf.UpstreamLock.Git.Commit).To(Equal(catalog.Commit))
	g.Expect(kf.Info.Description).To(Equal("a namespace per tenant"))
	kfText, _ := p.File("Kptfile")
	g.Expect(string(kfText)).To(ContainSubstring("# the blueprint"), "comments survive")

	quota, _ := p.File("quota.yaml")
	g.Expect(string(quota)).To(ContainSubstring("metadata: # kpt-merge: example/quota"))
	readme, _ := p.File("README.md")
	g.Expect(string(readme)).To(Equal("# base-ns\n"))
	_, ok := p.File(PackageContextFile)
	g.Expect(ok).To(BeFalse(), "no package context without ForDeployment")
}

func TestClone_forDeployment(t *testing.T) {
	g := NewWithT(t)
	up := blueprint()
	// An existing package context keeps its other keys.
	g.Expect(up.SetFile("db/context.yaml", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\ndata:\n  name: old\n  region: useast1\n"))).To(Succeed())
	p, err := Clone(up, catalog, CloneOptions{Name: "tenant-a", PackagePath: "tenant-a", ForDeployment: true})
	g.Expect(err).NotTo(HaveOccurred())

	root, ok := p.File(PackageContextFile)
	g.Expect(ok).To(BeTrue())
	g.Expect(string(root)).To(Equal("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  name: tenant-a\n"))
	sub, _ := p.File("db/context.yaml")
	g.Expect(string(sub)).To(ContainSubstring("name: db\n"))
	g.Expect(string(sub)).To(ContainSubstring("region: useast1"))
	g.Expect(string(sub)).To(ContainSubstring("package-path: tenant-a/db"))
	_, ok = p.File("db/" + PackageContextFile)
	g.Expect(ok).To(BeFalse(), "the existing subpackage context is reused, not duplicated")

	nested, err := Clone(blueprint(), catalog, CloneOptions{PackagePath: "team/tenant-b", ForDeployment: true})
	g.Expect(err).NotTo(HaveOccurred())
	ctx, _ := nested.File(PackageContextFile)
	g.Expect(string(ctx)).To(ContainSubstring("name: tenant-b\n  package-path: team/tenant-b\n"))
}

func TestClone_errors(t *testing.T) {
	g := NewWithT(t)
	_, err := Clone(pkg.New(map[string][]byte{"a.yaml": []byte("x: 1\n")}), catalog, CloneOptions{Name: "x"})
	g.Expect(err).To(MatchError("clone: the upstream package has no Kptfile"))
	_, err = Clone(blueprint(), catalog, CloneOptions{})
	g.Expect(err).To(MatchError("clone: the downstream package name is required"))
}

// TestUpdate_noop: updating to the revision already recorded changes
// nothing, byte for byte.
func TestUpdate_noop(t *testing.T) {
	g := NewWithT(t)
	local, err := Clone(blueprint(), catalog, CloneOptions{PackagePath: "tenant-a", ForDeployment: true})
	g.Expect(err).NotTo(HaveOccurred())
	out, changes, err := Update(local, blueprint(), blueprint(), catalog, "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changes).To(BeEmpty())
	g.Expect(out.Equal(local)).To(BeTrue())
}

// TestUpdate_concurrent runs many merges at once (go test -race): the
// engine has no shared mutable state.
func TestUpdate_concurrent(t *testing.T) {
	origin := blueprint()
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local, err := Clone(origin, catalog, CloneOptions{PackagePath: fmt.Sprintf("tenant-%d", i), ForDeployment: true})
			if err != nil {
				t.Error(err)
				return
			}
			updated := origin.DeepCopy()
			_ = updated.SetFile("quota.yaml", []byte(fmt.Sprintf("apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: quota\n  namespace: example\nspec:\n  hard:\n    pods: \"%d\"\n", 20+i)))
			out, _, err := Update(local, origin, updated, catalog, "")
			if err != nil {
				t.Error(err)
				return
			}
			q, _ := out.File("quota.yaml")
			if want := fmt.Sprintf("pods: \"%d\"", 20+i); !strings.Contains(string(q), want) {
				t.Errorf("update %d: want %s in\n%s", i, want, q)
			}
		}()
	}
	wg.Wait()
}
