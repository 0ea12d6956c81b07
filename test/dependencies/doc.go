// Package dependencies tests package dependencies in the cluster, with the
// whole controller manager against a real API server and git
// repositories: installation as PackageVariants, the dependencies gate,
// the per-repository PackageLock and its conflicts, and version ranges
// with their update policies.
package dependencies
