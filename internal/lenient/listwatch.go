package lenient

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Informers makes the informers of a controller-runtime cache
// (cache.Options.NewInformer) list and watch the kinds of Groups through a
// decoder that sets aside, and hands to Reporter, each object that does
// not decode. Other kinds, and any kind whose client cannot be built, keep
// the cache's own list and watch. The lenient list and watch apply the
// options the informer passes and no cache-wide selector: the cache must
// set none for these kinds.
type Informers struct {
	Config     *rest.Config
	HTTPClient *http.Client
	Scheme     *runtime.Scheme
	Mapper     meta.RESTMapper
	Reporter   *Reporter
	// Groups are the API groups whose kinds are listed leniently.
	Groups []string
}

// NewInformer has the signature of cache.Options.NewInformer.
func (i *Informers) NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	if own, err := i.listWatch(obj); err == nil && own != nil {
		lw = own
	} else if err != nil {
		i.Reporter.Log.Error(err, "listing strictly: an object of this kind that does not decode stops its informer")
	}
	return toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
}

// listWatch builds the lenient list and watch of obj's kind, or nil for
// a kind it does not apply to.
func (i *Informers) listWatch(obj runtime.Object) (*toolscache.ListWatch, error) {
	if _, ok := obj.(runtime.Unstructured); ok {
		return nil, nil
	}
	if _, ok := obj.(*metav1.PartialObjectMetadata); ok {
		return nil, nil
	}
	gvk, err := apiutil.GVKForObject(obj, i.Scheme)
	if err != nil {
		return nil, err
	}
	ours := false
	for _, g := range i.Groups {
		ours = ours || g == gvk.Group
	}
	if !ours {
		return nil, nil
	}
	mapping, err := i.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", gvk, err)
	}
	newObj := func() runtime.Object {
		o, _ := i.Scheme.New(gvk)
		return o
	}
	listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	if _, err := i.Scheme.New(listGVK); err != nil {
		return nil, err
	}
	codecs := serializer.WithoutConversionCodecFactory{CodecFactory: serializer.NewCodecFactory(i.Scheme)}
	cfg := rest.CopyConfig(i.Config)
	gv := gvk.GroupVersion()
	cfg.GroupVersion = &gv
	cfg.APIPath = "/apis"
	cfg.ContentType = runtime.ContentTypeJSON
	cfg.AcceptContentTypes = runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = negotiated{NegotiatedSerializer: codecs, wrap: func(d runtime.Decoder) runtime.Decoder {
		return &decoder{inner: d, gvk: gvk, newObj: newObj, setAside: i.Reporter.SetAside}
	}}
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientForConfigAndClient(cfg, i.HTTPClient)
	if err != nil {
		return nil, fmt.Errorf("a client for %s: %w", gvk, err)
	}
	params := runtime.NewParameterCodec(i.Scheme)
	resource := mapping.Resource.Resource
	rep := i.Reporter
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list := rep.beginList(gvk)
			res, _ := i.Scheme.New(listGVK)
			if err := rc.Get().Resource(resource).VersionedParams(&opts, params).Do(ctx).Into(res); err != nil {
				return nil, err
			}
			if l, err := meta.ListAccessor(res); err == nil && opts.Continue == "" && l.GetContinue() == "" {
				rep.endList(gvk, list)
			}
			return res, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.Watch = true
			w, err := rc.Get().Resource(resource).VersionedParams(&opts, params).Watch(ctx)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
				return standIn(e, gvk, newObj, rep), true
			}), nil
		},
	}, nil
}

// standIn turns the event of an object that does not decode into the
// deletion of the object from the cache (the controllers must not act on
// a version they cannot read, nor on an older one), and notes the objects
// that decode again or are gone.
func standIn(e watch.Event, gvk schema.GroupVersionKind, newObj func() runtime.Object, rep *Reporter) watch.Event {
	u, ok := e.Object.(*Undecodable)
	if !ok {
		if (e.Type == watch.Added || e.Type == watch.Modified || e.Type == watch.Deleted) && rep.Any(gvk) {
			if m, err := meta.Accessor(e.Object); err == nil {
				rep.Decodes(gvk, m.GetNamespace(), m.GetName())
			}
		}
		return e
	}
	if e.Type == watch.Deleted {
		rep.Decodes(gvk, u.Namespace, u.Name)
	}
	obj := newObj()
	if m, err := meta.Accessor(obj); err == nil {
		m.SetNamespace(u.Namespace)
		m.SetName(u.Name)
		m.SetUID(u.UID)
		m.SetResourceVersion(u.ResourceVersion)
		m.SetLabels(u.Labels)
	}
	return watch.Event{Type: watch.Deleted, Object: obj}
}

// negotiated is a NegotiatedSerializer whose decoders are wrapped.
type negotiated struct {
	runtime.NegotiatedSerializer
	wrap func(runtime.Decoder) runtime.Decoder
}

// DecoderToVersion implements runtime.NegotiatedSerializer.
func (n negotiated) DecoderToVersion(d runtime.Decoder, gv runtime.GroupVersioner) runtime.Decoder {
	return n.wrap(n.NegotiatedSerializer.DecoderToVersion(d, gv))
}
