package repocache

import (
	"context"
	"errors"
	"net"
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

// A Repository whose remote hangs holds only the worker opening it: the
// others that need it get ErrBusy after OpenWait and can come back later,
// instead of queueing behind the open.
func TestCache_busyWhileOpening(t *testing.T) {
	g := NewWithT(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accepted, never answered
		}
	}()
	c := &Cache{Dir: t.TempDir(), Timeout: 3 * time.Second, OpenWait: 100 * time.Millisecond}
	repo := repository("http://" + ln.Addr().String() + "/pkgs.git")
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
	_, err = c.Open(context.Background(), repo)
	g.Expect(errors.Is(err, ErrBusy)).To(BeTrue(), "a second open does not wait for the hung one: %v", err)
	g.Expect(err.Error()).To(ContainSubstring("is being opened by another reconcile (its remote http://" + ln.Addr().String() + "/pkgs.git is slow)"))
	var err1 error
	g.Eventually(first, "10s").Should(Receive(&err1))
	g.Expect(errors.Is(err1, store.ErrTimeout)).To(BeTrue(), "%v", err1)
}
