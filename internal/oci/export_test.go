package oci

// SetCatalogPage sets how many repositories one catalog request asks for
// until the test ends.
func SetCatalogPage(t interface{ Cleanup(func()) }, n int) {
	old := catalogPage
	catalogPage = n
	t.Cleanup(func() { catalogPage = old })
}

// Held says what the store holds: the manifests of every package, the
// distinct digests its tags hold, and the package layers kept read.
func Held(s *Store) (manifests, digests, contents int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ps := range s.pkgs {
		manifests += len(ps.manifests)
		held := map[string]bool{}
		for _, d := range ps.tags {
			held[d] = true
		}
		digests += len(held)
	}
	return manifests, digests, s.contents.Len()
}
