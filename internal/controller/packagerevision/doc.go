// Package packagerevision reconciles PackageRevision objects into git:
// tasks materialize a draft (one commit), spec.lifecycle moves the
// revision through Draft, Proposed, Published and DeletionProposed,
// readiness gates guard publishing into deployment repositories, and
// deleting the object removes the revision from git.
package packagerevision
