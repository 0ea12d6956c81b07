package pkgservice

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/engine"
	"github.com/scion-dev/scion/internal/kptfile"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
)

// ErrInvalid is matched by errors a retry cannot fix: the object asks for
// something impossible (a bad task, a transition git does not allow).
var ErrInvalid = errors.New("invalid")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrInvalid)
}

// Source is a package revision a task reads from.
type Source struct {
	Repository *configv1alpha1.Repository
	Store      store.Store
	Revision   store.Revision
}

// Origin is the upstream identity of a source, as a Kptfile records it.
func (s Source) Origin() engine.Origin {
	full := s.Revision.Package
	if d := s.Store.Directory(); d != "" {
		full = path.Join(d, full)
	}
	return engine.Origin{Repo: s.Store.URL(), Directory: full, Ref: s.Store.RefName(s.Revision), Commit: s.Revision.Commit}
}

// Read returns the files of the source.
func (s Source) Read(ctx context.Context) (*pkg.Package, error) {
	return s.Store.Read(ctx, s.Revision)
}

// SourceResolver finds what a task reads from.
type SourceResolver interface {
	// Revision finds the package revision a task names.
	Revision(ctx context.Context, name string) (Source, error)
	// Git reads a package from a git repository no Repository names (a
	// clone from a git URL), with errors naming field; it returns the
	// package and the upstream a clone of it records.
	Git(ctx context.Context, g porchv1alpha1.GitPackage, field string) (*pkg.Package, engine.Origin, error)
}

// Contents computes the package a PackageRevision's first task describes.
func Contents(ctx context.Context, pr *porchv1alpha1.PackageRevision, deployment bool, resolve SourceResolver) (*pkg.Package, string, error) {
	if len(pr.Spec.Tasks) == 0 {
		return nil, "", invalid("spec.tasks is empty: a new PackageRevision needs an init, clone, edit or upgrade task")
	}
	t := pr.Spec.Tasks[0]
	name := path.Base(pr.Spec.PackageName)
	switch t.Type {
	case porchv1alpha1.TaskTypeInit:
		kf := kptfile.New(name)
		if t.Init != nil {
			kf.Info = &kptfilev1.PackageInfo{Description: t.Init.Description, Keywords: t.Init.Keywords, Site: t.Init.Site}
			if kf.Info.Description == "" && len(kf.Info.Keywords) == 0 && kf.Info.Site == "" {
				kf.Info = nil
			}
		}
		data, err := kptfile.Marshal(kf)
		if err != nil {
			return nil, "", err
		}
		p := pkg.New(map[string][]byte{kptfilev1.KptFileName: data, "README.md": []byte("# " + name + "\n")})
		if deployment {
			if err := engine.EnsurePackageContext(p, name, pr.Spec.PackageName); err != nil {
				return nil, "", err
			}
		}
		return p, "Initialize " + pr.Spec.PackageName, nil
	case porchv1alpha1.TaskTypeClone:
		up, origin, from, err := cloneSource(ctx, t.Clone.UpstreamRef, resolve)
		if err != nil {
			return nil, "", err
		}
		p, err := engine.Clone(up, origin, engine.CloneOptions{Name: name, PackagePath: pr.Spec.PackageName, ForDeployment: deployment})
		if err != nil {
			return nil, "", invalid("spec.tasks[0].clone: %v", err)
		}
		return p, fmt.Sprintf("Clone %s from %s", pr.Spec.PackageName, from), nil
	case porchv1alpha1.TaskTypeEdit:
		src, err := resolve.Revision(ctx, t.Edit.SourceRef.Name)
		if err != nil {
			return nil, "", fmt.Errorf("spec.tasks[0].edit.sourceRef: %w", err)
		}
		if src.Revision.Package != pr.Spec.PackageName || src.Repository.Name != pr.Spec.Repository {
			return nil, "", invalid("spec.tasks[0].edit.sourceRef: %s is package %s in %s; an edit copies a revision of the same package", t.Edit.SourceRef.Name, src.Revision.Package, src.Repository.Name)
		}
		p, err := src.Read(ctx)
		if err != nil {
			return nil, "", err
		}
		return p, fmt.Sprintf("Edit %s from %s", pr.Spec.PackageName, t.Edit.SourceRef.Name), nil
	case porchv1alpha1.TaskTypeUpgrade:
		u := t.Upgrade
		var srcs [3]Source
		for i, ref := range []struct{ field, name string }{{"oldUpstream", u.OldUpstream.Name}, {"newUpstream", u.NewUpstream.Name}, {"localPackageRevisionRef", u.LocalPackageRevisionRef.Name}} {
			s, err := resolve.Revision(ctx, ref.name)
			if err != nil {
				return nil, "", fmt.Errorf("spec.tasks[0].upgrade.%s: %w", ref.field, err)
			}
			srcs[i] = s
		}
		var pkgs [3]*pkg.Package
		for i, s := range srcs {
			p, err := s.Read(ctx)
			if err != nil {
				return nil, "", err
			}
			pkgs[i] = p
		}
		out, _, err := engine.Update(pkgs[2], pkgs[0], pkgs[1], srcs[1].Origin(), u.Strategy)
		if err != nil {
			return nil, "", invalid("spec.tasks[0].upgrade: %v", err)
		}
		return out, fmt.Sprintf("Upgrade %s to %s", pr.Spec.PackageName, u.NewUpstream.Name), nil
	default:
		return nil, "", invalid("spec.tasks[0]: unknown task type %q", t.Type)
	}
}

// cloneSource reads what a clone task clones: a package revision, or a
// package in a git repository; it returns the package, the upstream the
// clone records and how the commit message names the source.
func cloneSource(ctx context.Context, up porchv1alpha1.UpstreamPackage, resolve SourceResolver) (*pkg.Package, engine.Origin, string, error) {
	const field = "spec.tasks[0].clone.upstreamRef"
	if g := up.Git; g != nil {
		p, origin, err := resolve.Git(ctx, *g, field+".git")
		if err != nil {
			return nil, engine.Origin{}, "", err
		}
		return p, origin, fmt.Sprintf("%s@%s", origin.Repo, origin.Ref), nil
	}
	src, err := resolve.Revision(ctx, up.Revision())
	if err != nil {
		return nil, engine.Origin{}, "", fmt.Errorf("%s: %w", field, err)
	}
	p, err := src.Read(ctx)
	if err != nil {
		return nil, engine.Origin{}, "", err
	}
	return p, src.Origin(), up.Revision(), nil
}

// CreateDraft writes a new draft for pr with contents, as one commit that
// records the object's UID. When a draft of the same package and workspace
// already exists and records this object, it is returned: the write
// happened before a crash or restart.
func (s *Service) CreateDraft(ctx context.Context, repo store.Store, pr *porchv1alpha1.PackageRevision, contents *pkg.Package, message string) (store.Revision, error) {
	rev, err := repo.WriteDraft(ctx, store.DraftWrite{
		Package: pr.Spec.PackageName, Workspace: pr.Spec.WorkspaceName, Contents: contents, Message: message,
		Writer: store.WriterPackageRevision, Trailers: store.Trailers{store.TrailerObject: pr.Namespace + "/" + pr.Name, store.TrailerObjectUID: string(pr.UID)},
	})
	if err == nil || !errors.Is(err, store.ErrConflict) {
		return rev, err
	}
	// The workspace is taken in git: perhaps by this very write, whose
	// answer was lost (the mirror does not know yet). Look again.
	if ferr := repo.FetchPackage(ctx, pr.Spec.PackageName); ferr != nil {
		return store.Revision{}, errors.Join(err, ferr)
	}
	existing, getErr := repo.Get(ctx, pr.Spec.PackageName, pr.Spec.WorkspaceName, 0)
	if getErr == nil && existing.Trailers[store.TrailerObjectUID] == string(pr.UID) {
		return existing, nil
	}
	return store.Revision{}, invalid("package %s already has a revision in workspace %q: choose another workspaceName", pr.Spec.PackageName, pr.Spec.WorkspaceName)
}

// UnmetGates lists the readiness gates whose condition is not True.
func UnmetGates(gates []kptfilev1.ReadinessGate, conditions []porchv1alpha1.Condition) []string {
	status := map[string]porchv1alpha1.ConditionStatus{}
	for _, c := range conditions {
		status[c.Type] = c.Status
	}
	var unmet []string
	seen := map[string]bool{}
	for _, g := range gates {
		if status[g.ConditionType] != "True" && !seen[g.ConditionType] {
			unmet = append(unmet, g.ConditionType)
			seen[g.ConditionType] = true
		}
	}
	sort.Strings(unmet)
	return unmet
}

// ConditionsSubject begins the subject of the commits that write a
// revision's conditions and readiness gates into its Kptfile.
const ConditionsSubject = "Set conditions and readiness gates"

// MirrorToKptfile writes the readiness gates and conditions set on the
// object of a draft or a proposal into its Kptfile, so git keeps them (and
// their history) and publishing records them. It returns the new
// revision, or rev when the Kptfile already says so.
func (s *Service) MirrorToKptfile(ctx context.Context, repo store.Store, pr *porchv1alpha1.PackageRevision, rev store.Revision) (store.Revision, error) {
	p, err := repo.Read(ctx, rev)
	if err != nil {
		return rev, err
	}
	if _, ok := p.File(kptfilev1.KptFileName); !ok {
		return rev, nil
	}
	before := p.DeepCopy()
	err = p.EditKptfile(func(kf *kptfilev1.KptFile) error {
		for _, g := range pr.Spec.ReadinessGates {
			kptfile.AddReadinessGate(kf, g.ConditionType)
		}
		for _, c := range pr.Status.Conditions {
			if porchv1alpha1.IsControllerCondition(c.Type) || c.Type == engine.RenderedCondition {
				continue
			}
			kptfile.SetCondition(kf, kptfilev1.Condition{Type: c.Type, Status: kptfilev1.ConditionStatus(c.Status), Reason: c.Reason, Message: c.Message})
		}
		return nil
	})
	if err != nil {
		return rev, invalid("the Kptfile of %s: %v", pr.Name, err)
	}
	if p.Equal(before) {
		return rev, nil
	}
	var changed []string
	for _, c := range pr.Status.Conditions {
		if !porchv1alpha1.IsControllerCondition(c.Type) {
			changed = append(changed, c.Type+"="+string(c.Status))
		}
	}
	return repo.WriteDraft(ctx, store.DraftWrite{
		Package: rev.Package, Workspace: rev.Workspace, Expected: rev.Commit, Contents: p,
		Message:  ConditionsSubject + ": " + strings.Join(changed, ", "),
		Proposed: rev.Lifecycle == porchv1alpha1.LifecycleProposed,
		Writer:   store.WriterPackageRevision,
	})
}

// PushDraft writes a person's edit of a draft (scion rpkg push) as one
// commit, against the commit the edit started from (expected): a
// compare-and-swap that fails with store.ErrConflict when the draft moved
// on. The draft's trailers (its object, its PackageVariant) carry over;
// author, when set, is the commit's author (the person), instead of the
// repository's.
func (s *Service) PushDraft(ctx context.Context, st store.Store, rev store.Revision, expected string, contents *pkg.Package, message, author string) (store.Revision, error) {
	return st.WriteDraft(ctx, store.DraftWrite{Package: rev.Package, Workspace: rev.Workspace, Expected: expected, Contents: contents, Message: message, Author: author, Writer: store.WriterPerson})
}

// Delete removes a revision from git; one already gone is not an error.
func (s *Service) Delete(ctx context.Context, st store.Store, rev store.Revision) error {
	if err := st.Delete(ctx, rev, store.WriterPackageRevision); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return nil
}

// SetFloatingTag points a package's floating tag (stable, prod, ...) at a
// published revision, with a compare-and-swap against the tag as read: it
// fails with store.ErrConflict when someone moved the tag meanwhile. It
// returns the revision the tag pointed at before (0: it did not exist).
func (s *Service) SetFloatingTag(ctx context.Context, st store.Store, pkgPath, tag string, revision int) (int, error) {
	return st.SetFloatingTag(ctx, pkgPath, tag, revision)
}

// PublishDirect writes contents as a new revision of a package straight to
// Published (a draft, proposed, then published by publishedBy), outside
// any PackageRevision's lifecycle: how a platform team's release tooling
// (and the demo, seeding its catalog) publishes a blueprint.
func (s *Service) PublishDirect(ctx context.Context, st store.Store, pkgPath, workspace string, contents *pkg.Package, message, publishedBy string) (store.Revision, error) {
	d, err := st.WriteDraft(ctx, store.DraftWrite{Package: pkgPath, Workspace: workspace, Contents: contents, Message: message, Writer: store.WriterRelease})
	if err != nil {
		return store.Revision{}, err
	}
	if _, err := st.Propose(ctx, pkgPath, workspace, d.Commit, store.Proposal{}); err != nil {
		return store.Revision{}, err
	}
	return st.Publish(ctx, pkgPath, workspace, "", publishedBy, store.WriterRelease)
}

// CommittedSince describes, in a line, the commits made on a draft (now)
// after commit: at most five, newest first ("" when none are found).
// What a person who wrote against commit is told changed meanwhile.
func CommittedSince(ctx context.Context, st store.Store, now store.Revision, commit string) string {
	var since []string
	history, _ := st.DraftHistory(ctx, now)
	for _, c := range history {
		if c.Hash == commit || len(since) == 5 {
			break
		}
		since = append(since, c.String())
	}
	return strings.Join(since, "; ")
}
