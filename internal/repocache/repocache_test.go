package repocache

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

func repository(url string) *configv1alpha1.Repository {
	return &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "r"},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: url, CreateBranch: true}}}
}

// file:// URLs are a trust boundary: off unless allowed, and never into
// the controller's own state, where other tenants' mirrors live.
func TestCache_fileURLs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	bare := gitserver.InitBare(t, t.TempDir(), "pkgs.git")

	off := &Cache{Dir: t.TempDir()}
	_, err := off.Open(ctx, repository("file://"+bare))
	g.Expect(errors.Is(err, ErrURLNotAllowed)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).To(ContainSubstring("file:// repositories are turned off in this controller (--allow-file-repositories is for development)"))

	on := &Cache{Dir: t.TempDir(), AllowFileRepositories: true}
	_, err = on.Open(ctx, repository("file://"+bare))
	g.Expect(err).NotTo(HaveOccurred())

	// Another tenant's mirror, by its path or through a link to it.
	mirrors, err := filepath.Glob(filepath.Join(on.Dir, "tenant-a", "r", "*"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mirrors).To(HaveLen(1))
	_, err = on.Open(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-b", Name: "steal"},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "file://" + mirrors[0]}}})
	g.Expect(errors.Is(err, ErrURLNotAllowed)).To(BeTrue(), "%v", err)
	link := filepath.Join(t.TempDir(), "innocent.git")
	g.Expect(os.Symlink(mirrors[0], link)).To(Succeed())
	_, err = on.Open(ctx, &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-b", Name: "steal"},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: "file://" + link}}})
	g.Expect(errors.Is(err, ErrURLNotAllowed)).To(BeTrue(), "through a symbolic link: %v", err)
	g.Expect(err.Error()).To(ContainSubstring("is inside the controller's own state"))
}
