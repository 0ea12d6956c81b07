package oci

// SetCatalogPage sets how many repositories one catalog request asks for
// until the test ends.
func SetCatalogPage(t interface{ Cleanup(func()) }, n int) {
	old := catalogPage
	catalogPage = n
	t.Cleanup(func() { catalogPage = old })
}
