package repocache

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/store"
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
	mirrors, err := filepath.Glob(filepath.Join(on.Dir, "[0-9a-f]*"))
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

// Mirror folders are named by a keyed hash: nothing a tenant can read
// (namespace, name, URL) tells where another's mirror is, and the key
// outlives a restart, so mirrors are reused.
func TestCache_mirrorDirNotDerivable(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	r := repository("https://git.example.com/pkgs.git")
	a := &Cache{Dir: dir}
	got, err := a.mirrorDir(r)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(filepath.Dir(got)).To(Equal(dir))
	g.Expect(filepath.Base(got)).To(MatchRegexp(`^[0-9a-f]{32}$`))
	info, err := os.Stat(filepath.Join(dir, keyFile))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)), "only the controller reads the key")

	restarted := &Cache{Dir: dir}
	g.Expect(restarted.mirrorDir(r)).To(Equal(got), "the key is kept: the mirror is reused")
	elsewhere := &Cache{Dir: t.TempDir()}
	other, err := elsewhere.mirrorDir(r)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(filepath.Base(other)).NotTo(Equal(filepath.Base(got)), "another key, another name")
	renamed := r.DeepCopy()
	renamed.Name = "other"
	g.Expect(a.mirrorDir(renamed)).NotTo(Equal(got))

	g.Expect(os.WriteFile(filepath.Join(dir, keyFile), []byte("short"), 0o600)).To(Succeed())
	_, err = (&Cache{Dir: dir}).mirrorDir(r)
	g.Expect(err).To(MatchError(ContainSubstring("is damaged: remove it")))
}

// A Repository whose remote hangs holds only the worker opening it: the
// others that need it get ErrBusy after OpenWait and can come back later,
// instead of queueing behind the open.
func TestCache_busyWhileOpening(t *testing.T) {
	g := NewWithT(t)
	tarpit := gitserver.NewTarpit(t)
	c := &Cache{Dir: t.TempDir(), Timeout: 3 * time.Second, OpenWait: 100 * time.Millisecond}
	repo := repository(tarpit.URLFor("pkgs.git"))
	first := make(chan error, 1)
	go func() {
		_, err := c.Open(context.Background(), repo)
		first <- err
	}()
	// Once the first open holds the Repository, ask again.
	g.Eventually(func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		if e := c.repos[types.NamespacedName{Namespace: repo.Namespace, Name: repo.Name}]; e != nil {
			return len(e.lock)
		}
		return 0
	}, "2s", "5ms").Should(Equal(1))
	_, err := c.Open(context.Background(), repo)
	g.Expect(errors.Is(err, store.ErrBusy)).To(BeTrue(), "a second open does not wait for the hung one: %v", err)
	g.Expect(err.Error()).To(ContainSubstring("is being opened by another reconcile (its remote " + tarpit.URLFor("pkgs.git") + " is slow)"))
	var err1 error
	g.Eventually(first, "10s").Should(Receive(&err1))
	g.Expect(errors.Is(err1, store.ErrTimeout)).To(BeTrue(), "%v", err1)
}
