// Package store keeps package revisions in git, the system of record.
//
// A Repository mirrors one remote git repository into a local bare cache
// and reads package content from git objects, without a work tree. The
// lifecycle of a package revision is encoded in refs, compatible with Porch:
//
//	Draft             refs/heads/drafts/<pkgpath>/<workspace>
//	Proposed          refs/heads/proposed/<pkgpath>/<workspace>
//	Published         the package directory on the branch, plus the
//	                  annotated tag refs/tags/<pkgpath>/v<N>
//	DeletionProposed  refs/heads/deletionProposed/<pkgpath>/v<N>
//	floating tag      refs/tags/<pkgpath>/<name> (such as stable)
//
// <pkgpath> includes the Repository's directory, so several Repository
// objects can share one git repository. Commits Scion writes carry trailers
// (Scion-Package, Scion-Workspace, Scion-Revision, plus any the caller adds)
// so that metadata survives in git alone.
//
// Every ref update is a compare-and-swap: the push names the commit the
// writer read as the old value, and git receive-pack applies the update only
// if the ref still has that value. A writer that lost a race gets an error
// matching ErrConflict. Updates of several refs (publishing moves the
// branch, creates the tag and deletes the proposed branch) are atomic.
package store
