package packagevariantset_test

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	"github.com/scion-dev/scion/internal/controller/packagevariantset"
	"github.com/scion-dev/scion/internal/scheme"
)

// A Repository created just before a set (kubectl apply of both, a GitOps
// sync) may not have reached the controller's cache when the set is
// expanded: the expansion is then retried (a read error), not stalled with
// "Repository not found" and a Warning; a Repository the API server does
// not have either is missing. The cache here is a real one that holds only
// Repositories with a label none of the fleet's has: it has not seen them.
func TestClusterSource_repositoryNotInTheCacheYet(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := newFleet(t)
	behind, err := cache.New(env.Config, cache.Options{Scheme: scheme.NewStorage(), ByObject: map[client.Object]cache.ByObject{
		&configv1alpha1.Repository{}: {Label: labels.SelectorFromSet(labels.Set{"example.com/never": "set"})},
	}})
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = behind.Start(ctx) }()
	c, err := client.New(env.Config, client.Options{Scheme: scheme.NewStorage(), Cache: &client.CacheOptions{Reader: behind}})
	g.Expect(err).NotTo(HaveOccurred())
	// The cache answers (it has synced): it does not have cluster-01.
	g.Eventually(func() error {
		return c.List(ctx, &configv1alpha1.RepositoryList{}, client.InNamespace(f.ns))
	}).Should(Succeed())

	src := packagevariantset.NewClusterSource(c, k8sClient)
	repo, err := src.Repository(ctx, f.ns, "cluster-01")
	g.Expect(repo).To(BeNil())
	g.Expect(err).To(MatchError(ContainSubstring(`the Repository "cluster-01" exists but is not in the controller's cache yet`)))
	g.Expect(errors.Is(err, packagevariantset.ErrReadingCluster)).To(BeTrue(), "retried, not stalled")

	repo, err = src.Repository(ctx, f.ns, "nosuch")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(repo).To(BeNil(), "missing: the set stalls and says so")
}
