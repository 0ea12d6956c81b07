package apiserver

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

// PorchAPIGroup is the group the server adds to the user it writes to the
// storage as: RBAC grants it the storage, so that a person needs no role
// of their own there (their roles in porch.kpt.dev are checked first, by
// this server), and only impersonators (this server) can claim it.
const PorchAPIGroup = "scion.dev:porch-api"

// revisionsResource is the resource of package revisions, in both groups.
const revisionsResource = "packagerevisions"

// storage reaches Scion's storage of package revisions
// (packagerevisions.internal.scion.dev) through the cluster's API server.
type storage struct {
	rc rest.Interface
	// upstreams names the upstream of revisions without a task (nil:
	// shown as stored).
	upstreams *upstreamNames
	// cache is the copy lists are served from (nil: lists are the
	// storage's); every revision read or written here is recorded in it
	// (saw), for the lists that follow to show it.
	cache *listCache
}

// newStorage returns a client of the storage.
func newStorage(cfg *rest.Config) (*storage, error) {
	c := rest.CopyConfig(cfg)
	gv := porchv1alpha1.StorageGroupVersion
	c.GroupVersion = &gv
	c.APIPath = "/apis"
	c.NegotiatedSerializer = storageCodecs.WithoutConversion()
	c.UserAgent = "scion-apiserver"
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, err
	}
	return &storage{rc: rc}, nil
}

// asUser makes a request as the user of ctx (impersonated, with
// PorchAPIGroup), so that the storage's admission policies see who asked.
func asUser(ctx context.Context, r *rest.Request) *rest.Request {
	u, ok := request.UserFrom(ctx)
	if !ok {
		return r
	}
	r.SetHeader("Impersonate-User", u.GetName())
	r.SetHeader("Impersonate-Group", append(slices.Clone(u.GetGroups()), PorchAPIGroup)...)
	if uid := u.GetUID(); uid != "" {
		r.SetHeader("Impersonate-Uid", uid)
	}
	for k, v := range u.GetExtra() {
		r.SetHeader("Impersonate-Extra-"+url.PathEscape(k), v...)
	}
	return r
}

func (s *storage) get(ctx context.Context, ns, name string, opts *metav1.GetOptions) (*porchv1alpha1.PackageRevision, error) {
	out := &porchv1alpha1.PackageRevision{}
	err := s.rc.Get().Namespace(ns).Resource(revisionsResource).Name(name).
		VersionedParams(opts, metav1.ParameterCodec).Do(ctx).Into(out)
	return s.answer(out, err)
}

// listShown lists revisions as Porch's clients are shown them (before
// the upstream names): from the server's copy when it can answer opts
// (listCache), else from the storage.
func (s *storage) listShown(ctx context.Context, ns string, opts *metainternalversion.ListOptions) (*porchv1alpha1.PackageRevisionList, error) {
	list, ok, err := s.cache.list(ctx, ns, opts)
	if err != nil || ok {
		return list, err
	}
	v1opts, err := listOptions(opts)
	if err != nil {
		return nil, err
	}
	if list, err = s.list(ctx, ns, v1opts); err != nil {
		return nil, err
	}
	for i := range list.Items {
		porchShape(&list.Items[i])
	}
	return list, nil
}

func (s *storage) list(ctx context.Context, ns string, opts *metav1.ListOptions) (*porchv1alpha1.PackageRevisionList, error) {
	out := &porchv1alpha1.PackageRevisionList{}
	err := s.rc.Get().Namespace(ns).Resource(revisionsResource).
		VersionedParams(opts, metav1.ParameterCodec).Do(ctx).Into(out)
	return out, porchError(err)
}

func (s *storage) watch(ctx context.Context, ns string, opts *metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	w, err := s.rc.Get().Namespace(ns).Resource(revisionsResource).
		VersionedParams(opts, metav1.ParameterCodec).Watch(ctx)
	return w, porchError(err)
}

func (s *storage) create(ctx context.Context, pr *porchv1alpha1.PackageRevision, opts *metav1.CreateOptions) (*porchv1alpha1.PackageRevision, error) {
	out := &porchv1alpha1.PackageRevision{}
	err := asUser(ctx, s.rc.Post().Namespace(pr.Namespace).Resource(revisionsResource).
		VersionedParams(opts, metav1.ParameterCodec).Body(pr)).Do(ctx).Into(out)
	return s.answer(out, err)
}

// update writes pr (its status when subresource is "status").
func (s *storage) update(ctx context.Context, pr *porchv1alpha1.PackageRevision, subresource string, opts *metav1.UpdateOptions) (*porchv1alpha1.PackageRevision, error) {
	out := &porchv1alpha1.PackageRevision{}
	r := s.rc.Put().Namespace(pr.Namespace).Resource(revisionsResource).Name(pr.Name)
	if subresource != "" {
		r = r.SubResource(subresource)
	}
	err := asUser(ctx, r.VersionedParams(opts, metav1.ParameterCodec).Body(pr)).Do(ctx).Into(out)
	return s.answer(out, err)
}

func (s *storage) delete(ctx context.Context, ns, name string, opts *metav1.DeleteOptions) error {
	res := asUser(ctx, s.rc.Delete().Namespace(ns).Resource(revisionsResource).Name(name).Body(opts)).Do(ctx)
	if err := res.Error(); err != nil {
		return porchError(err)
	}
	// The answer is the revision as deleted (or marked for deletion), at
	// the deletion's resourceVersion.
	if out := (&porchv1alpha1.PackageRevision{}); res.Into(out) == nil {
		s.cache.saw(out)
	}
	return nil
}

// answer is what the storage answered a get or write of a revision,
// recorded in the list cache.
func (s *storage) answer(out *porchv1alpha1.PackageRevision, err error) (*porchv1alpha1.PackageRevision, error) {
	if err != nil {
		return out, porchError(err)
	}
	s.cache.saw(out)
	return out, nil
}

// porchError speaks of an error of the storage as of porch.kpt.dev: the
// storage's group is an implementation detail.
func porchError(err error) error {
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) {
		return err
	}
	st := status.Status()
	from, to := porchv1alpha1.StorageGroupVersion.Group, porchv1alpha1.GroupVersion.Group
	st.Message = strings.ReplaceAll(st.Message, from, to)
	if st.Details != nil && st.Details.Group == from {
		st.Details.Group = to
	}
	return &apierrors.StatusError{ErrStatus: st}
}
