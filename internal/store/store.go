package store

import (
	"context"
	"time"

	"github.com/scion-dev/scion/internal/pkg"
)

// Store is where a Repository's package revisions live: a git repository
// (Repository, this package) or an OCI registry (oci.Store). pkgservice,
// the controllers and the API server read and write through it, so the
// lifecycle, its compare-and-swap and its errors (ErrNotFound,
// ErrConflict, ErrUnavailable, LimitError) are the same on both.
//
// A Revision's Commit is what identifies its content in the store: a git
// commit hash, or an OCI manifest digest. Writers pass back the Commit
// they read as the expected value of a compare-and-swap.
type Store interface {
	// URL is the store's address without credentials: a git URL, or
	// oci://REGISTRY/PREFIX.
	URL() string
	// Directory is the folder of the packages inside a git repository
	// ("" for an OCI store, whose packages are repositories of their
	// own).
	Directory() string
	// RefName is what a Kptfile's upstream records as the ref of rev.
	RefName(rev Revision) string
	// Head identifies the store's published state as of the last fetch
	// (a branch commit, or a digest of the tags read); "" when empty.
	Head() string
	// RefsVersion changes whenever what the store read changes.
	RefsVersion() uint64

	// Fetch reads the remote now; FetchIfOlder only when the last fetch
	// is older than maxAge.
	Fetch(ctx context.Context) error
	FetchIfOlder(ctx context.Context, maxAge time.Duration) error
	// Resync is the periodic Fetch, which nobody asked for: a store may
	// take the packages it wrote itself since it last read them as it
	// wrote them, and read them at the next Resync or Fetch. An OCI
	// store does (a package's tags cost the registry a request each);
	// a git store fetches, since one exchange reads every ref. A write
	// made by another process (the API server, scion rpkg) is followed
	// by a requested sync, which must Fetch.
	Resync(ctx context.Context) error
	// FetchPackage reads one package from the remote now, when it is
	// looked for and not found: a git store fetches (as Fetch); an OCI
	// store reads that package's tags, which finds a package its
	// catalog read (shared, and seldom on a large registry) does not
	// list yet.
	FetchPackage(ctx context.Context, pkgPath string) error
	// Trim frees memory held for reads when the store is idle.
	Trim() bool

	// List returns every revision; ListPackage those of one package.
	List(ctx context.Context) ([]Revision, error)
	ListPackage(ctx context.Context, pkgPath string) ([]Revision, error)
	// Get finds one revision: by workspace (revision 0) or by number.
	Get(ctx context.Context, pkgPath, workspace string, revision int) (Revision, error)
	// Read returns the files of a revision; ReadFile one of them.
	Read(ctx context.Context, rev Revision) (*pkg.Package, error)
	ReadFile(ctx context.Context, rev Revision, name string) ([]byte, error)
	// DraftHistory returns the writes of a draft or proposal, newest
	// first; DraftFork the published state it started from ("" when not
	// known); SamePackage whether a package has the same content at two
	// Commits (a commit a git store does not have: ErrUnknownCommit).
	DraftHistory(ctx context.Context, rev Revision) ([]Commit, error)
	DraftFork(ctx context.Context, rev Revision) (string, error)
	SamePackage(ctx context.Context, p, a, b string) (bool, error)

	// WriteDraft creates or updates a draft (or a proposal, w.Proposed).
	WriteDraft(ctx context.Context, w DraftWrite) (Revision, error)
	// Propose, RejectProposal and Publish move a workspace's revision
	// through its lifecycle; expected is the Commit the caller read.
	Propose(ctx context.Context, p, ws, expected string, record Proposal) (Revision, error)
	RejectProposal(ctx context.Context, p, ws, expected string) (Revision, error)
	Publish(ctx context.Context, p, ws, expected, publishedBy, writer string) (Revision, error)
	// ProposeDeletion and RejectDeletion mark and unmark a published
	// revision; Delete removes a revision of any lifecycle.
	ProposeDeletion(ctx context.Context, p string, revision int) (Revision, error)
	RejectDeletion(ctx context.Context, p string, revision int) (Revision, error)
	Delete(ctx context.Context, rev Revision, writer string) error

	// SetFloatingTag points a floating tag at a published revision and
	// returns the revision it pointed at before (0: none);
	// FloatingTags lists a package's; ResolveFloatingTag finds the
	// revision one points at.
	SetFloatingTag(ctx context.Context, p, tag string, revision int) (int, error)
	FloatingTags(ctx context.Context, p string) (map[string]int, error)
	ResolveFloatingTag(ctx context.Context, p, tag string) (Revision, error)
}

var _ Store = (*Repository)(nil)
