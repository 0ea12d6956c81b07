package v1alpha1

// OpenAPIModelName names PackageRevision in the OpenAPI of Scion's API
// server (and the scheme's OpenAPI definition names).
func (PackageRevision) OpenAPIModelName() string { return "dev.kpt.porch.v1alpha1.PackageRevision" }

// OpenAPIModelName names PackageRevisionList in OpenAPI.
func (PackageRevisionList) OpenAPIModelName() string {
	return "dev.kpt.porch.v1alpha1.PackageRevisionList"
}
