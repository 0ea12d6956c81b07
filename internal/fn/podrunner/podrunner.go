// Package podrunner runs KRM function images as Pods, for Scion's servers
// in a cluster (which have no container CLI): each Pod runs the image with
// Scion's function wrapper (`scion fn wrapper`, copied in by an init
// container of Scion's own image) in front of the image's entrypoint, and
// takes ResourceLists over HTTP, so nothing is written to git or disk on
// the way. Pods are kept warm per image and reused; an idle one is
// deleted after Options.IdleTTL, one that failed to answer at once.
//
// The Pods run in a namespace of their own with no service account
// token, no host namespaces, a read-only root filesystem, non-root,
// without capabilities, under resource limits; only the runner that made
// a Pod (by a random token in it) may call it.
package podrunner

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/kustomize/kyaml/fn/framework"

	"github.com/scion-dev/scion/internal/fn"
)

// Labels of the Pods.
const (
	// ManagedByLabel marks every function Pod (value "scion").
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// RunnerLabel names the runner (Options.Identity) that made a Pod.
	RunnerLabel = "scion.dev/function-runner"
	// ImageLabel is a hash of the Pod's function image.
	ImageLabel = "scion.dev/function-image"
	// ImageAnnotation is the Pod's function image.
	ImageAnnotation = "scion.dev/function-image"
)

// Port is where the wrapper listens in a Pod.
const Port = 9446

// wrapperDir is where the wrapper is installed in a Pod.
const wrapperDir = "/scion-wrapper"

// Options configure a Runner.
type Options struct {
	// Namespace is where function Pods run.
	Namespace string
	// WrapperImage is Scion's image, whose scion binary the init
	// container copies into the Pod.
	WrapperImage string
	// Identity names this runner (its Pod's name in a cluster); its Pods
	// carry it (RunnerLabel), and it deletes those it finds at Start.
	Identity string
	// IdentityNamespace is the namespace of the Pods that identities
	// name: a function Pod whose runner's Pod is gone is deleted.
	// Unset: no such sweep.
	IdentityNamespace string
	// Timeout, when set, bounds each run instead of the pipeline's
	// runtime's timeout.
	Timeout time.Duration
	// IdleTTL is how long an idle Pod is kept warm: 10 minutes when 0.
	IdleTTL time.Duration
	// MaxPerImage bounds the Pods of one image: 4 when 0. Runs beyond it
	// wait for a Pod.
	MaxPerImage int
	// StartTimeout bounds a Pod's start (its image's pull included): 2
	// minutes when 0.
	StartTimeout time.Duration
	// Resources are each function container's; DefaultResources when
	// empty.
	Resources corev1.ResourceRequirements
	// Entrypoint, when set, gives an image's entrypoint instead of its
	// registry's configuration (for tests and images from registries the
	// runner cannot read).
	Entrypoint func(ctx context.Context, image string) ([]string, error)
}

// DefaultResources bound a function container.
var DefaultResources = corev1.ResourceRequirements{
	Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
	Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
}

// Runner runs function images as Pods. It implements fn.ImageRunner.
type Runner struct {
	client kubernetes.Interface
	opts   Options
	token  string
	http   *http.Client

	// swept is closed once Start has deleted the Pods of this runner's
	// previous process: runs wait for it, or the sweep would delete
	// their new Pods.
	swept chan struct{}

	mu          sync.Mutex
	pools       map[string]*pool
	entrypoints map[string][]string
}

// pool is one image's Pods.
type pool struct {
	idle  []*warmPod
	count int           // Pods made and not yet deleted
	free  chan struct{} // signalled when a Pod goes idle or is deleted
}

type warmPod struct {
	name, ip string
	lastUsed time.Time
}

// New returns a runner making Pods with client.
func New(client kubernetes.Interface, opts Options) (*Runner, error) {
	if opts.Namespace == "" || opts.WrapperImage == "" || opts.Identity == "" {
		return nil, errors.New("the function runner needs a namespace, Scion's image and an identity")
	}
	if opts.IdleTTL <= 0 {
		opts.IdleTTL = 10 * time.Minute
	}
	if opts.MaxPerImage <= 0 {
		opts.MaxPerImage = 4
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 2 * time.Minute
	}
	if len(opts.Resources.Limits) == 0 && len(opts.Resources.Requests) == 0 {
		opts.Resources = DefaultResources
	}
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	return &Runner{
		client: client, opts: opts, token: hex.EncodeToString(b[:]),
		http:        &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext, MaxIdleConnsPerHost: 2}},
		pools:       map[string]*pool{},
		entrypoints: map[string][]string{},
		swept:       make(chan struct{}),
	}, nil
}

// Start deletes the Pods a previous run of this runner left (its process
// restarted), then, until ctx ends, deletes idle Pods past IdleTTL and
// Pods whose runner is gone. It returns when ctx ends (a
// manager.Runnable).
func (r *Runner) Start(ctx context.Context) error {
	if err := r.client.CoreV1().Pods(r.opts.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)},
		metav1.ListOptions{LabelSelector: RunnerLabel + "=" + r.opts.Identity}); err != nil {
		log.FromContext(ctx).Error(err, "deleting the function Pods of a previous run", "namespace", r.opts.Namespace)
	}
	close(r.swept)
	tick := time.NewTicker(r.opts.IdleTTL / 4)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			r.deleteAll()
			return nil
		case <-tick.C:
			r.expire(ctx)
			r.sweepOrphans(ctx)
		}
	}
}

// RunImage runs image on rl in a warm Pod, or a new one.
func (r *Runner) RunImage(ctx context.Context, image string, timeout time.Duration, rl *framework.ResourceList) error {
	if r.opts.Timeout > 0 {
		timeout = r.opts.Timeout
	}
	p, err := r.acquire(ctx, image)
	if err != nil {
		return err
	}
	err = (&fn.Remote{URL: "http://" + net.JoinHostPort(p.ip, strconv.Itoa(Port)), Token: r.token, Timeout: timeout, Client: r.http}).Run(ctx, rl)
	var se *fn.StderrError
	if err == nil || errors.As(err, &se) && se.ExitCode >= 0 {
		// The function ran (and maybe failed): the Pod is as good as
		// before.
		r.release(image, p)
		return err
	}
	// Timed out, cut off or unreachable: the Pod is in an unknown state.
	r.discard(image, p)
	return err
}

// acquire takes an idle Pod of image, or makes one when the image has
// fewer than MaxPerImage, or waits for one.
func (r *Runner) acquire(ctx context.Context, image string) (*warmPod, error) {
	select {
	case <-r.swept:
	case <-ctx.Done():
		return nil, fmt.Errorf("the function runner has not started: %w", ctx.Err())
	}
	for {
		r.mu.Lock()
		pl := r.pools[image]
		if pl == nil {
			pl = &pool{free: make(chan struct{}, 1)}
			r.pools[image] = pl
		}
		if n := len(pl.idle); n > 0 {
			p := pl.idle[n-1]
			pl.idle = pl.idle[:n-1]
			r.mu.Unlock()
			return p, nil
		}
		if pl.count < r.opts.MaxPerImage {
			pl.count++
			r.mu.Unlock()
			p, err := r.start(ctx, image)
			if err != nil {
				r.mu.Lock()
				pl.count--
				r.mu.Unlock()
				r.signal(pl)
				return nil, err
			}
			return p, nil
		}
		free := pl.free
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-free:
		}
	}
}

func (r *Runner) signal(pl *pool) {
	select {
	case pl.free <- struct{}{}:
	default:
	}
}

func (r *Runner) release(image string, p *warmPod) {
	p.lastUsed = time.Now()
	r.mu.Lock()
	pl := r.pools[image]
	pl.idle = append(pl.idle, p)
	r.mu.Unlock()
	r.signal(pl)
}

func (r *Runner) discard(image string, p *warmPod) {
	r.delete(p.name)
	r.mu.Lock()
	pl := r.pools[image]
	pl.count--
	r.mu.Unlock()
	r.signal(pl)
}

// delete removes a Pod at once, whatever the caller's context.
func (r *Runner) delete(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := r.client.CoreV1().Pods(r.opts.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if err != nil && !apierrors.IsNotFound(err) {
		log.FromContext(ctx).Error(err, "deleting a function Pod", "namespace", r.opts.Namespace, "pod", name)
	}
}

// expire deletes idle Pods unused for IdleTTL.
func (r *Runner) expire(_ context.Context) {
	var gone []string
	r.mu.Lock()
	for _, pl := range r.pools {
		kept := pl.idle[:0]
		for _, p := range pl.idle {
			if time.Since(p.lastUsed) > r.opts.IdleTTL {
				gone = append(gone, p.name)
				pl.count--
				continue
			}
			kept = append(kept, p)
		}
		pl.idle = kept
	}
	r.mu.Unlock()
	for _, name := range gone {
		r.delete(name)
	}
}

// deleteAll deletes every idle Pod (the process is stopping).
func (r *Runner) deleteAll() {
	r.mu.Lock()
	var names []string
	for _, pl := range r.pools {
		for _, p := range pl.idle {
			names = append(names, p.name)
			pl.count--
		}
		pl.idle = nil
	}
	r.mu.Unlock()
	for _, n := range names {
		r.delete(n)
	}
}

// sweepOrphans deletes function Pods whose runner's Pod is gone (a
// replica deleted while it had warm Pods).
func (r *Runner) sweepOrphans(ctx context.Context) {
	if r.opts.IdentityNamespace == "" {
		return
	}
	pods, err := r.client.CoreV1().Pods(r.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: ManagedByLabel + "=scion," + RunnerLabel + "!=" + r.opts.Identity})
	if err != nil {
		return
	}
	alive := map[string]bool{}
	for _, p := range pods.Items {
		owner := p.Labels[RunnerLabel]
		if _, seen := alive[owner]; !seen {
			_, err := r.client.CoreV1().Pods(r.opts.IdentityNamespace).Get(ctx, owner, metav1.GetOptions{})
			alive[owner] = !apierrors.IsNotFound(err)
		}
		if !alive[owner] {
			r.delete(p.Name)
		}
	}
}

// start makes a Pod for image and waits until its wrapper serves.
func (r *Runner) start(ctx context.Context, image string) (*warmPod, error) {
	entry, err := r.entrypoint(ctx, image)
	if err != nil {
		return nil, err
	}
	pod := r.podFor(image, entry)
	created, err := r.client.CoreV1().Pods(r.opts.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("making a Pod for %s in %s: %w", image, r.opts.Namespace, err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.StartTimeout)
	defer cancel()
	waiting := "it was not scheduled"
	for {
		p, err := r.client.CoreV1().Pods(r.opts.Namespace).Get(ctx, created.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("function Pod %s/%s for %s was deleted while it started", r.opts.Namespace, created.Name, image)
		}
		if err == nil {
			waiting = pending(p)
			if why := failedStart(p); why != "" {
				r.delete(created.Name)
				return nil, fmt.Errorf("function Pod %s/%s for %s: %s", r.opts.Namespace, created.Name, image, why)
			}
			if p.Status.PodIP != "" && ready(p) {
				return &warmPod{name: p.Name, ip: p.Status.PodIP, lastUsed: time.Now()}, nil
			}
		}
		select {
		case <-ctx.Done():
			r.delete(created.Name)
			return nil, fmt.Errorf("function Pod %s/%s for %s did not start in time (%s)", r.opts.Namespace, created.Name, image, waiting)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// pending says what a Pod that has not started waits for: the first
// condition that is not True, with its reason and message.
func pending(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			return strings.TrimSpace(fmt.Sprintf("%s: %s %s", c.Type, c.Reason, c.Message))
		}
	}
	return "phase " + string(p.Status.Phase)
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// failedStart says why a Pod will not start ("" while it may): its image
// cannot be pulled, a container ended, the Pod failed.
func failedStart(p *corev1.Pod) string {
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return "the Pod ended (" + string(p.Status.Phase) + ")"
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "CreateContainerError", "CreateContainerConfigError", "RunContainerError":
				return fmt.Sprintf("container %s: %s: %s", cs.Name, w.Reason, w.Message)
			}
		}
		if t := cs.State.Terminated; t != nil && (t.ExitCode != 0 || cs.Name == "function") {
			return fmt.Sprintf("container %s exited %d: %s %s", cs.Name, t.ExitCode, t.Reason, strings.TrimSpace(t.Message))
		}
	}
	return ""
}

// entrypoint is the image's entrypoint and command, from its registry's
// configuration (cached per image).
func (r *Runner) entrypoint(ctx context.Context, image string) ([]string, error) {
	r.mu.Lock()
	e, ok := r.entrypoints[image]
	r.mu.Unlock()
	if ok {
		return e, nil
	}
	if r.opts.Entrypoint != nil {
		e, err := r.opts.Entrypoint(ctx, image)
		if err != nil {
			return nil, err
		}
		return r.cacheEntrypoint(image, e), nil
	}
	ref, err := name.ParseReference(image)
	if err != nil {
		return nil, fmt.Errorf("image %q: %w", image, err)
	}
	img, err := remote.Image(ref, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain))
	if err != nil {
		return nil, fmt.Errorf("reading the configuration of %s: %w", image, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the configuration of %s: %w", image, err)
	}
	e = append(append([]string(nil), cf.Config.Entrypoint...), cf.Config.Cmd...)
	if len(e) == 0 {
		return nil, fmt.Errorf("image %s has neither entrypoint nor command", image)
	}
	return r.cacheEntrypoint(image, e), nil
}

func (r *Runner) cacheEntrypoint(image string, e []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entrypoints[image] = e
	return e
}

// ImageHash is the value of ImageLabel for image.
func ImageHash(image string) string {
	h := sha256.Sum256([]byte(image))
	return hex.EncodeToString(h[:])[:40]
}

// podFor is the Pod that runs image's entrypoint behind the wrapper.
func (r *Runner) podFor(image string, entrypoint []string) *corev1.Pod {
	restricted := &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	wrapper := wrapperDir + "/" + WrapperBinary
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "fn-" + podNamePart(fn.BuiltinName(image)) + "-",
			Namespace:    r.opts.Namespace,
			Labels:       map[string]string{ManagedByLabel: "scion", RunnerLabel: r.opts.Identity, ImageLabel: ImageHash(image)},
			Annotations:  map[string]string{ImageAnnotation: image},
		},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](65532),
				RunAsGroup:     ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			InitContainers: []corev1.Container{{
				Name:            "install-wrapper",
				Image:           r.opts.WrapperImage,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Args:            []string{"fn", "wrapper", "install", wrapperDir},
				SecurityContext: restricted,
				// Requests of its own: left out, they would be the limits,
				// and the scheduler reserves the most of any init
				// container's for the whole Pod.
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "wrapper", MountPath: wrapperDir}},
			}},
			Containers: []corev1.Container{{
				Name:            "function",
				Image:           image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         append([]string{wrapper, "fn", "wrapper", "serve", "--listen", ":" + strconv.Itoa(Port), "--"}, entrypoint...),
				Env:             []corev1.EnvVar{{Name: TokenEnv, Value: r.token}},
				Ports:           []corev1.ContainerPort{{Name: "wrapper", ContainerPort: Port}},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: fn.HealthPath, Port: intstr.FromInt32(Port)}},
					PeriodSeconds: 1,
				},
				Resources:       r.opts.Resources,
				SecurityContext: restricted,
				VolumeMounts: []corev1.VolumeMount{
					{Name: "wrapper", MountPath: wrapperDir, ReadOnly: true},
					{Name: "tmp", MountPath: "/tmp"},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: "wrapper", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("256Mi"))}}},
				{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("256Mi"))}}},
			},
		},
	}
}

// podNamePart makes s fit a Pod name: lower case letters, digits and
// dashes, at most 30 characters.
func podNamePart(s string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(s) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' {
			b.WriteRune(c)
		}
		if b.Len() == 30 {
			break
		}
	}
	if out := strings.Trim(b.String(), "-"); out != "" {
		return out
	}
	return "function"
}

// TokenEnv is the variable that gives the wrapper its token (the scion
// command's `fn wrapper serve` reads it).
const TokenEnv = "SCION_FUNCTION_TOKEN"

// WrapperBinary is the name the wrapper has in a Pod (`scion fn wrapper
// install` copies the scion binary there under it).
const WrapperBinary = "scion-fn-wrapper"
