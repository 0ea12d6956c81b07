package v1alpha2

// OpenAPIModelName names PackageRevision in the OpenAPI of Scion's API
// server.
func (PackageRevision) OpenAPIModelName() string { return "dev.kpt.porch.v1alpha2.PackageRevision" }

// OpenAPIModelName names PackageRevisionList in OpenAPI.
func (PackageRevisionList) OpenAPIModelName() string {
	return "dev.kpt.porch.v1alpha2.PackageRevisionList"
}
