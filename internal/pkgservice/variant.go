package pkgservice

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/engine"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
)

// Subjects of the commits a PackageVariant writes.
const (
	VariantCreateSubject = "Create from PackageVariant "
	VariantUpdateSubject = "Update from PackageVariant "
)

// VariantRevisions is what git has of a variant's downstream package.
type VariantRevisions struct {
	// All are the package's revisions.
	All []store.Revision
	// Draft and Proposal are the variant's own (by the git trailer
	// recording the variant; with adoptExisting, a draft no variant
	// owns); Published is the latest published revision.
	Draft, Proposal, Published *store.Revision
}

// FindVariantRevisions finds the variant's revisions among the
// downstream package's.
func FindVariantRevisions(ctx context.Context, st store.Store, pv *configv1alpha1.PackageVariant) (VariantRevisions, error) {
	revs, err := st.ListPackage(ctx, pv.Spec.Downstream.Package)
	if err != nil {
		return VariantRevisions{}, err
	}
	d := VariantRevisions{All: revs}
	var adoptable *store.Revision
	self := variantID(pv)
	for i := range revs {
		rev := &revs[i]
		owner := rev.Trailers[store.TrailerPackageVariant]
		switch {
		case rev.Lifecycle == porchv1alpha1.LifecycleDraft && owner == self:
			d.Draft = rev
		case rev.Lifecycle == porchv1alpha1.LifecycleProposed && owner == self:
			d.Proposal = rev
		case rev.Lifecycle == porchv1alpha1.LifecycleDraft && owner == "" && adoptable == nil:
			adoptable = rev
		case rev.Latest:
			d.Published = rev
		}
	}
	if d.Draft == nil && pv.Spec.AdoptionPolicy == configv1alpha1.AdoptionPolicyAdoptExisting {
		d.Draft = adoptable // adopted: the next commit records the variant
	}
	return d, nil
}

// variantID is how git names a variant (TrailerPackageVariant): its
// namespace and name, which outlive the object. A variant recognises its
// drafts by it, so a variant applied again (restored from a backup, or
// deleted with deletionPolicy orphan and created again) finds its drafts
// rather than writing new ones; its UID is recorded too, but not asked.
func variantID(pv *configv1alpha1.PackageVariant) string {
	return pv.Namespace + "/" + pv.Name
}

// VariantWrote are the revisions among revs that the variant wrote (by
// its namespace and name, as git records them).
func VariantWrote(pv *configv1alpha1.PackageVariant, revs []store.Revision) []store.Revision {
	var out []store.Revision
	for _, rev := range revs {
		if rev.Trailers[store.TrailerPackageVariant] == variantID(pv) {
			out = append(out, rev)
		}
	}
	return out
}

// WriteVariantDraft commits a variant's package onto its draft, or
// creates one in the first free workspace packagevariant-N. The commit
// records the variant in trailers, which is how its draft is found again
// (after a crash too).
func (s *Service) WriteVariantDraft(ctx context.Context, st store.Store, pv *configv1alpha1.PackageVariant, revs VariantRevisions, p *pkg.Package) (store.Revision, error) {
	trailers := store.Trailers{store.TrailerPackageVariant: variantID(pv), store.TrailerPackageVariantUID: string(pv.UID)}
	if d := revs.Draft; d != nil {
		return st.WriteDraft(ctx, store.DraftWrite{Package: d.Package, Workspace: d.Workspace, Expected: d.Commit, Contents: p,
			Message: VariantUpdateSubject + pv.Name, Trailers: trailers, Writer: store.WriterPackageVariant})
	}
	used := map[string]bool{}
	for _, rev := range revs.All {
		used[rev.Workspace] = true
	}
	for n := 1; ; n++ {
		ws := "packagevariant-" + strconv.Itoa(n)
		if used[ws] {
			continue
		}
		// A new draft is pushed only if git has no revision of the
		// package this mirror has not seen: none of ours (written
		// before a crash, or by another replica) nor one to adopt.
		// Otherwise the write fails with a conflict, the mirror is
		// fetched, and the retry decides again. The workspace of a
		// deleted revision is skipped: its name is never used again.
		rev, err := st.WriteDraft(ctx, store.DraftWrite{Package: pv.Spec.Downstream.Package, Workspace: ws, Contents: p,
			Message: VariantCreateSubject + pv.Name, Trailers: trailers, Writer: store.WriterPackageVariant, CheckRemote: true})
		var retired *store.RetiredError
		if errors.As(err, &retired) && n < maxRetiredSkipped {
			continue
		}
		return rev, err
	}
}

// maxRetiredSkipped bounds the retired workspaces a variant's new draft
// skips.
const maxRetiredSkipped = 10000

// ForeignCommits lists the commits of a variant's draft (or proposal)
// that neither the variant nor the PackageRevision controller wrote: a
// person's push, with scion rpkg push or plain git.
func ForeignCommits(ctx context.Context, st store.Store, pv *configv1alpha1.PackageVariant, pkgPath, workspace string) ([]string, error) {
	rev, err := st.Get(ctx, pkgPath, workspace, 0)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	history, err := st.DraftHistory(ctx, rev)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range history {
		if !variantOrController(c, pv) {
			out = append(out, c.String())
		}
	}
	return out, nil
}

// variantOrController says whether a commit was written by the variant
// itself (by its namespace and name: an earlier object of the same name
// counts) or by the PackageRevision controller (conditions mirrored into
// the Kptfile, a proposal), from its writer trailer: a person's push
// carries the variant's other trailers over, but not the writer. Commits
// written before the writer trailer existed are told by their exact
// subject and the variant's trailer.
func variantOrController(c store.Commit, pv *configv1alpha1.PackageVariant) bool {
	switch c.Trailers[store.TrailerWriter] {
	case store.WriterPackageVariant:
		return c.Trailers[store.TrailerPackageVariant] == variantID(pv)
	case store.WriterPackageRevision:
		return true
	case "":
		return (c.Subject == VariantCreateSubject+pv.Name || c.Subject == VariantUpdateSubject+pv.Name) && c.Trailers[store.TrailerPackageVariant] == variantID(pv) ||
			strings.HasPrefix(c.Subject, ConditionsSubject+": ")
	}
	return false
}

// OntoPublished brings a draft onto the latest published revision of its
// package when that revision is not the one the draft forked from
// (someone published another revision meanwhile): the draft then keeps
// what was published, and publishing it reverts nothing. It returns the
// draft's contents, merged when needed, and whether they were.
func OntoPublished(ctx context.Context, st store.Store, draft store.Revision, contents *pkg.Package, published store.Revision) (*pkg.Package, bool, error) {
	fork, err := st.DraftFork(ctx, draft)
	if err != nil || fork == "" {
		return contents, false, err
	}
	// Usually the package is what it was at the fork (other packages
	// were published since): the trees say so without reading files.
	if same, err := st.SamePackage(ctx, draft.Package, fork, published.Commit); err != nil || same {
		return contents, false, err
	}
	forked, err := st.Read(ctx, store.Revision{Package: draft.Package, Commit: fork})
	if errors.Is(err, store.ErrNotFound) {
		return contents, false, nil // a new package when the draft was made: nothing to bring it onto
	}
	if err != nil {
		return nil, false, err
	}
	latest, err := st.Read(ctx, published)
	if err != nil {
		return nil, false, err
	}
	merged, _, err := engine.Merge(contents, forked, latest)
	if err != nil {
		return nil, false, fmt.Errorf("bringing draft %s onto the published revision v%d: %w", draft.Workspace, published.Revision, err)
	}
	return merged, true, nil
}
