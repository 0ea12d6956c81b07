package pkgservice

import (
	"testing"

	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
)

// What a revision's upstream is shown as: the package and its published
// revision, whatever the store; else what the lock pins.
func TestUpstreamVersion(t *testing.T) {
	for _, tc := range []struct {
		name string
		lock *kptfilev1.UpstreamLock
		want string
	}{
		{"none", nil, ""},
		{"git, a published revision", &kptfilev1.UpstreamLock{Git: &kptfilev1.GitLock{Repo: "https://git.example.com/blueprints.git", Directory: "apps/regional-app", Ref: "apps/regional-app/v4", Commit: "0123456789abcdef0123"}}, "regional-app v4"},
		{"git, a branch", &kptfilev1.UpstreamLock{Git: &kptfilev1.GitLock{Repo: "https://git.example.com/blueprints.git", Directory: "regional-app", Ref: "main", Commit: "0123456789abcdef0123"}}, "regional-app@0123456789ab"},
		{"oci, a published revision", &kptfilev1.UpstreamLock{OCI: &kptfilev1.OCILock{Image: "registry.example.com/blueprints/tenant-ns:v1", Digest: "sha256:fedcba9876543210"}}, "tenant-ns v1"},
		{"oci, another tag", &kptfilev1.UpstreamLock{OCI: &kptfilev1.OCILock{Image: "registry.example.com/blueprints/tenant-ns:stable", Digest: "sha256:fedcba9876543210"}}, "tenant-ns@fedcba987654"},
	} {
		if got := UpstreamVersion(tc.lock); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
