package content

// OpenAPIModelName names PackageRevisionResources in the OpenAPI of
// Scion's API server.
func (PackageRevisionResources) OpenAPIModelName() string {
	return "dev.kpt.porch.v1alpha1.PackageRevisionResources"
}

// OpenAPIModelName names PackageRevisionResourcesList in OpenAPI.
func (PackageRevisionResourcesList) OpenAPIModelName() string {
	return "dev.kpt.porch.v1alpha1.PackageRevisionResourcesList"
}
