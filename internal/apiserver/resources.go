package apiserver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/api/porch/v1alpha1/content"
	"github.com/scion-dev/scion/internal/engine"
	"github.com/scion-dev/scion/internal/fn"
	"github.com/scion-dev/scion/internal/fn/builtin"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/repocache"
	"github.com/scion-dev/scion/internal/store"
)

// revisionMetadataFile is the file porchctl rpkg pull adds to a pulled
// package (the revision's metadata, for push): it is not package content.
const revisionMetadataFile = ".KptRevisionMetadata"

// resourcesGR names packagerevisionresources in errors.
var resourcesGR = content.SchemeBuilder.GroupVersion.WithResource("packagerevisionresources").GroupResource()

// contentMaxAge is how stale the git view may be when content is read:
// requests in a burst share one fetch.
const contentMaxAge = time.Second

// resources serves packagerevisionresources: a revision's files, from git.
type resources struct {
	storage *storage
	// client reads Repositories and asks them to sync.
	client  client.Client
	repos   *repocache.Cache
	service *pkgservice.Service
	limits  store.Limits
	// functionImages are Options.FunctionImages.
	functionImages []string
	// functionRunner is Options.FunctionRunner.
	functionRunner fn.ImageRunner
	table          rest.TableConvertor
}

var (
	_ rest.Storage              = &resources{}
	_ rest.Scoper               = &resources{}
	_ rest.SingularNameProvider = &resources{}
	_ rest.Getter               = &resources{}
	_ rest.Lister               = &resources{}
	_ rest.Updater              = &resources{}
)

// New returns an empty PackageRevisionResources.
func (r *resources) New() runtime.Object { return &content.PackageRevisionResources{} }

// NewList returns an empty PackageRevisionResourcesList.
func (r *resources) NewList() runtime.Object { return &content.PackageRevisionResourcesList{} }

// List reads the files of every revision the selectors select (one read
// of git each: select what you need).
func (r *resources) List(ctx context.Context, opts *metainternalversion.ListOptions) (runtime.Object, error) {
	ns, _ := request.NamespaceFrom(ctx)
	v1opts, err := listOptions(opts)
	if err != nil {
		return nil, err
	}
	prs, err := r.storage.list(ctx, ns, v1opts)
	if err != nil {
		return nil, err
	}
	out := &content.PackageRevisionResourcesList{ListMeta: prs.ListMeta}
	// Each Repository is opened once for the list (its object, Secret
	// and refs), not once per revision.
	type opening struct {
		repo *configv1alpha1.Repository
		st   store.Store
		err  error
	}
	repos := map[string]opening{}
	for i := range prs.Items {
		pr := &prs.Items[i]
		op, ok := repos[pr.Spec.Repository]
		if !ok {
			op.repo, op.st, op.err = r.openRepository(ctx, ns, pr.Spec.Repository)
			repos[pr.Spec.Repository] = op
		}
		// One revision that cannot be read (its Repository down, a
		// package over the limits) is left out with a warning; the
		// others are listed.
		var o *opened
		err := op.err
		if err == nil {
			o, err = find(ctx, pr, op.repo, op.st)
		} else {
			err = unavailable(pr, err)
		}
		if apierrors.IsNotFound(err) {
			continue // not in git (any more): nothing to show
		}
		if err != nil {
			warning.AddWarning(ctx, "", fmt.Sprintf("%s left out: %s", pr.Name, store.Shorten(err.Error(), 300)))
			continue
		}
		p, err := o.st.Read(ctx, o.rev)
		if err != nil {
			warning.AddWarning(ctx, "", fmt.Sprintf("%s left out: %s", pr.Name, store.Shorten(readError(pr.Name, err).Error(), 300)))
			continue
		}
		out.Items = append(out.Items, *o.object(p.Files()))
	}
	return out, nil
}

// Destroy releases nothing.
func (r *resources) Destroy() {}

// NamespaceScoped is true.
func (r *resources) NamespaceScoped() bool { return true }

// GetSingularName returns packagerevisionresources.
func (r *resources) GetSingularName() string { return "packagerevisionresources" }

// ConvertToTable shows a revision's identity and number of files.
func (r *resources) ConvertToTable(ctx context.Context, obj, opts runtime.Object) (*metav1.Table, error) {
	return r.table.ConvertToTable(ctx, obj, opts)
}

// opened is a revision found in git.
type opened struct {
	pr   *porchv1alpha1.PackageRevision
	repo *configv1alpha1.Repository
	st   store.Store
	rev  store.Revision
}

// open finds the revision of a PackageRevision in git.
func (r *resources) open(ctx context.Context, name string) (*opened, error) {
	ns, _ := request.NamespaceFrom(ctx)
	pr, err := r.storage.get(ctx, ns, name, &metav1.GetOptions{})
	if err != nil {
		return nil, resourcesError(err, name)
	}
	return r.openRevision(ctx, pr)
}

// openRevision finds a PackageRevision's revision in git.
func (r *resources) openRevision(ctx context.Context, pr *porchv1alpha1.PackageRevision) (*opened, error) {
	repo, st, err := r.openRepository(ctx, pr.Namespace, pr.Spec.Repository)
	if err != nil {
		return nil, unavailable(pr, err)
	}
	return find(ctx, pr, repo, st)
}

// openRepository opens a Repository's git store, fresh within
// contentMaxAge.
func (r *resources) openRepository(ctx context.Context, ns, name string) (*configv1alpha1.Repository, store.Store, error) {
	repo, st, err := r.repos.OpenNamed(ctx, r.client, ns, name)
	if err != nil {
		return nil, nil, err
	}
	if err := st.FetchIfOlder(ctx, contentMaxAge); err != nil {
		return nil, nil, err
	}
	return repo, st, nil
}

// unavailable says a revision's content cannot be read because its
// Repository cannot.
func unavailable(pr *porchv1alpha1.PackageRevision, err error) error {
	return apierrors.NewServiceUnavailable(fmt.Sprintf("the content of %s is in Repository %s, which cannot be read now: %v", pr.Name, pr.Spec.Repository, err))
}

// find finds a PackageRevision's revision in its opened Repository.
func find(ctx context.Context, pr *porchv1alpha1.PackageRevision, repo *configv1alpha1.Repository, st store.Store) (*opened, error) {
	rev, err := st.Get(ctx, pr.Spec.PackageName, pr.Spec.WorkspaceName, 0)
	if errors.Is(err, store.ErrNotFound) {
		// Written since the store last read the remote (by the
		// controllers, a process of their own): look for it there.
		if ferr := st.FetchPackage(ctx, pr.Spec.PackageName); ferr != nil {
			return nil, ferr
		}
		rev, err = st.Get(ctx, pr.Spec.PackageName, pr.Spec.WorkspaceName, 0)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierrors.NewNotFound(resourcesGR, pr.Name)
	}
	if err != nil {
		return nil, err
	}
	return &opened{pr: pr, repo: repo, st: st, rev: rev}, nil
}

// resourcesError speaks of packagerevisionresources where the storage
// spoke of packagerevisions.
func resourcesError(err error, name string) error {
	if apierrors.IsNotFound(err) {
		return apierrors.NewNotFound(resourcesGR, name)
	}
	return err
}

// object is the PackageRevisionResources of a revision at its commit.
func (o *opened) object(files map[string][]byte) *content.PackageRevisionResources {
	out := &content.PackageRevisionResources{
		ObjectMeta: metav1.ObjectMeta{
			Name:              o.pr.Name,
			Namespace:         o.pr.Namespace,
			UID:               o.pr.UID,
			CreationTimestamp: o.pr.CreationTimestamp,
			Labels:            o.pr.Labels,
			Annotations:       o.pr.Annotations,
			ResourceVersion:   o.rev.Commit,
		},
		Spec: content.PackageRevisionResourcesSpec{
			PackageName:    o.rev.Package,
			WorkspaceName:  o.rev.Workspace,
			Revision:       o.rev.Revision,
			RepositoryName: o.pr.Spec.Repository,
			Resources:      make(map[string]string, len(files)),
		},
	}
	for name, data := range files {
		out.Spec.Resources[name] = string(data)
	}
	return out
}

// Get reads a revision's files from git.
func (r *resources) Get(ctx context.Context, name string, _ *metav1.GetOptions) (runtime.Object, error) {
	o, err := r.open(ctx, name)
	if err != nil {
		return nil, err
	}
	p, err := o.st.Read(ctx, o.rev)
	if err != nil {
		return nil, readError(name, err)
	}
	return o.object(p.Files()), nil
}

// readError says why a revision's files could not be read.
func readError(name string, err error) error {
	var limit *store.LimitError
	if errors.As(err, &limit) {
		return apierrors.NewForbidden(resourcesGR, name, err)
	}
	return err
}

// Update writes a Draft's files as one commit, made only when the draft
// is still at the commit the object was read at (its resourceVersion),
// then renders the package and records the render's result in status, as
// Porch does: a package whose render fails is written as given, and the
// status says why.
func (r *resources) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, _ rest.ValidateObjectFunc, validate rest.ValidateObjectUpdateFunc, _ bool, _ *metav1.UpdateOptions) (runtime.Object, bool, error) {
	o, err := r.open(ctx, name)
	if err != nil {
		return nil, false, err
	}
	cur, err := o.st.Read(ctx, o.rev)
	if err != nil {
		return nil, false, readError(name, err)
	}
	old := o.object(cur.Files())
	obj, err := objInfo.UpdatedObject(ctx, old.DeepCopy())
	if err != nil {
		return nil, false, err
	}
	in, ok := obj.(*content.PackageRevisionResources)
	if !ok {
		return nil, false, apierrors.NewBadRequest(fmt.Sprintf("not a PackageRevisionResources: %T", obj))
	}
	if validate != nil {
		if err := validate(ctx, in, old); err != nil {
			return nil, false, err
		}
	}
	gr := resourcesGR
	if o.rev.Lifecycle != porchv1alpha1.LifecycleDraft {
		return nil, false, notDraft(gr, name, o.rev.Lifecycle)
	}
	if in.ResourceVersion != "" && in.ResourceVersion != o.rev.Commit {
		return nil, false, changedSince(ctx, gr, name, o, in.ResourceVersion)
	}
	files, err := r.contents(name, o.rev.Package, in.Spec.Resources)
	if err != nil {
		return nil, false, err
	}
	p := pkg.New(files)
	status := content.RenderStatus{}
	rendered, renderStatus, renderErr := engine.Render(ctx, p, builtin.ServerRuntime(r.functionImages, r.functionRunner))
	if renderErr == nil && rendered != nil {
		p = rendered
	}
	status.Result = resultList(renderStatus)
	if renderErr != nil {
		status.Err = renderErr.Error()
	}
	who := "someone"
	if u, ok := request.UserFrom(ctx); ok {
		who = u.GetName()
	}
	message, err := commitMessage(name, in, who)
	if err != nil {
		return nil, false, err
	}
	out, err := r.service.PushDraft(ctx, o.st, o.rev, o.rev.Commit, p, message, who)
	if errors.Is(err, store.ErrConflict) {
		// The store fetched after losing the race: say what git has now.
		read := o.rev.Commit
		if now, gerr := o.st.Get(ctx, o.rev.Package, o.rev.Workspace, 0); gerr == nil {
			if now.Lifecycle != porchv1alpha1.LifecycleDraft {
				return nil, false, notDraft(gr, name, now.Lifecycle)
			}
			o.rev = now
		}
		return nil, false, changedSince(ctx, gr, name, o, read)
	}
	if err != nil {
		return nil, false, err
	}
	// The PackageRevision shows the new commit after the Repository's
	// sync; asking for one now makes that prompt.
	_ = pkgservice.RequestSync(ctx, r.client, o.repo)
	o.rev = out
	res := o.object(p.Files())
	res.Status.RenderStatus = status
	return res, false, nil
}

// changedSince refuses a write made against commit, which the draft has
// moved on from: it says what was committed since, and nothing is written.
func changedSince(ctx context.Context, gr schema.GroupResource, name string, o *opened, commit string) error {
	what := pkgservice.CommittedSince(ctx, o.st, o.rev, commit)
	if what != "" {
		what = ": " + what
	}
	return apierrors.NewConflict(gr, name, fmt.Errorf("the draft changed since it was read (read at commit %.12s, now %.12s%s); nothing was written: read it again, apply your edits and update", commit, o.rev.Commit, what))
}

// notDraft refuses to change the files of a revision that is not a Draft.
func notDraft(gr schema.GroupResource, name string, lc porchv1alpha1.Lifecycle) error {
	return apierrors.NewForbidden(gr, name, fmt.Errorf("the revision is %s: only a Draft's files can be changed (copy it to a new draft)", lc))
}

// contents checks the files of an update: paths inside the package, YAML
// that reads, within the limits. The file porchctl adds to what it pulled
// is dropped.
func (r *resources) contents(name, pkgPath string, in map[string]string) (map[string][]byte, error) {
	files := make(map[string][]byte, len(in))
	var errs field.ErrorList
	res := field.NewPath("spec", "resources")
	for name, data := range in {
		if name == revisionMetadataFile {
			continue
		}
		if problem := pkg.PathProblem(name); problem != "" {
			// A name with what a terminal would act on is shown quoted.
			key := shortName(name)
			if q := strconv.Quote(key); q != `"`+key+`"` {
				key = q
			}
			errs = append(errs, field.Invalid(res.Key(key), shortName(name), "a path inside the package that git can hold: "+problem))
			continue
		}
		files[name] = []byte(data)
	}
	if conflict := pkg.PathConflict(slices.Collect(maps.Keys(files))); conflict != "" {
		errs = append(errs, field.Invalid(res, "", conflict))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(resourcesKind, name, errs)
	}
	if err := r.limits.CheckPackage(pkgPath, files); err != nil {
		return nil, apierrors.NewRequestEntityTooLargeError(err.Error())
	}
	p := pkg.New(files)
	for _, name := range p.Paths() {
		if !pkg.IsResourceFile(name) {
			continue
		}
		if _, err := pkg.New(map[string][]byte{name: files[name]}).Resources(); err != nil {
			errs = append(errs, field.Invalid(res.Key(name), "", "not valid YAML: "+store.Shorten(err.Error(), 300)))
		}
	}
	if _, ok := files["Kptfile"]; !ok {
		errs = append(errs, field.Required(res.Key("Kptfile"), "a package has a Kptfile"))
	} else if _, err := p.Kptfile(); err != nil {
		errs = append(errs, field.Invalid(res.Key("Kptfile"), "", store.Shorten(err.Error(), 300)))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(resourcesKind, name, errs)
	}
	return files, nil
}

// shortName quotes at most 100 bytes of a path.
func shortName(s string) string { return store.Shorten(s, 100) }

// resultList reports a render as kpt's FunctionResultList.
func resultList(st *kptfilev1.RenderStatus) content.ResultList {
	out := content.ResultList{TypeMeta: metav1.TypeMeta{APIVersion: "kpt.dev/v1", Kind: "FunctionResultList"}}
	out.Name = "fnresults"
	if st == nil {
		return out
	}
	for _, steps := range [][]kptfilev1.StepResult{st.MutationSteps, st.ValidationSteps} {
		for _, s := range steps {
			item := &content.Result{Image: s.Image, ExecPath: s.Exec, Stderr: s.Stderr, ExitCode: s.ExitCode}
			for _, ri := range s.Results {
				item.Results = append(item.Results, resultItem(ri))
			}
			if s.ExitCode != 0 {
				out.ExitCode = 1
			}
			out.Items = append(out.Items, item)
		}
	}
	return out
}

// resultItem is one result, with kpt's structured references.
func resultItem(ri kptfilev1.ResultItem) content.ResultItem {
	out := content.ResultItem{Message: ri.Message, Severity: ri.Severity}
	if ri.Field != "" {
		out.Field = &content.Field{Path: ri.Field}
	}
	if ri.File != "" {
		out.File = &content.File{Path: ri.File}
	}
	if ri.ResourceRef != "" {
		// apiVersion/kind/namespace/name, apiVersion possibly group/version.
		parts := strings.Split(ri.ResourceRef, "/")
		if n := len(parts); n >= 4 {
			ref := &content.ResourceIdentifier{Name: parts[n-1], Namespace: parts[n-2]}
			ref.Kind = parts[n-3]
			ref.APIVersion = strings.Join(parts[:n-3], "/")
			out.ResourceRef = ref
		}
	}
	return out
}

// resourcesKind names PackageRevisionResources in errors.
var resourcesKind = content.SchemeBuilder.GroupVersion.WithKind("PackageRevisionResources").GroupKind()

// commitMessage is the message of the commit an update of in makes: the
// one its CommitMessageAnnotation gives (one line, at most
// content.MaxCommitMessage characters), else one that says who updated.
func commitMessage(name string, in *content.PackageRevisionResources, who string) (string, error) {
	msg, ok := in.Annotations[content.CommitMessageAnnotation]
	if !ok {
		return "Update through the API by " + who, nil
	}
	msg = strings.TrimSpace(msg)
	path := field.NewPath("metadata", "annotations").Key(content.CommitMessageAnnotation)
	switch {
	case msg == "":
		return "", apierrors.NewInvalid(resourcesKind, name, field.ErrorList{field.Required(path, "an empty commit message: leave the annotation out for the default")})
	case strings.ContainsAny(msg, "\r\n") || strings.ContainsFunc(msg, unicode.IsControl):
		return "", apierrors.NewInvalid(resourcesKind, name, field.ErrorList{field.Invalid(path, store.Shorten(msg, 100), "a commit message is one line, without control characters")})
	case len([]rune(msg)) > content.MaxCommitMessage:
		return "", apierrors.NewInvalid(resourcesKind, name, field.ErrorList{field.TooLong(path, store.Shorten(msg, 100), content.MaxCommitMessage)})
	}
	return msg, nil
}
