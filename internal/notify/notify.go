// Package notify tells people what waits for them or went wrong: a
// revision waiting for approval, a rollout wave waiting for approval, a
// rollout wave that failed or rolled back, a PackageVariant that stalled.
// It watches those objects (the manager's cache), and sends each event
// once to the webhook the namespace's Secret names, as Slack-compatible or
// generic JSON, retrying with backoff; a slow or hanging endpoint holds
// up only its own namespace's notifications, and never a reconcile.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/egress"
)

// The Secret of a namespace that turns its notifications on: AddressKey
// is the webhook's URL, FormatKey slack (Slack-compatible: {"text": ...})
// or generic (the default: every field of Event).
const (
	SecretName = "scion-notifications"
	AddressKey = "address"
	FormatKey  = "format"
)

// Event is one notification, and the generic format's body.
type Event struct {
	// Key identifies the event: the same event is sent once.
	Key       string    `json:"-"`
	Kind      string    `json:"kind"`
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Reason    string    `json:"reason"`
	Message   string    `json:"message"`
	Time      time.Time `json:"time"`
}

// Events are the events an object's state says: what a person is waited
// for, or should know went wrong.
func Events(obj client.Object) []Event {
	ev := func(kind, reason, key, msg string) Event {
		return Event{Key: kind + "/" + obj.GetNamespace() + "/" + obj.GetName() + "/" + key, Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(),
			Reason: reason, Message: msg, Time: time.Now().UTC()}
	}
	var out []Event
	switch o := obj.(type) {
	case *porchv1alpha1.PackageRevision:
		if o.GitLifecycle() == porchv1alpha1.LifecycleProposed && o.Spec.Lifecycle == porchv1alpha1.LifecycleProposed && o.DeletionTimestamp.IsZero() {
			by := ""
			if p := o.Annotations[porchv1alpha1.ProposedByAnnotation]; p != "" {
				by = " by " + p
			}
			// Once per proposal: its record says when (the proposal's
			// commit moves as conditions are set on it).
			out = append(out, ev("PackageRevision", "AwaitingApproval", "proposed/"+o.Annotations[porchv1alpha1.ProposedAtAnnotation],
				fmt.Sprintf("PackageRevision %s/%s (package %s in repository %s) was proposed%s and waits for approval", o.Namespace, o.Name, o.Spec.PackageName, o.Spec.Repository, by)))
		}
	case *configv1alpha1.PackageRollout:
		for _, w := range o.Status.Waves {
			switch {
			case w.State == configv1alpha1.WaveAwaitingApproval:
				out = append(out, ev("PackageRollout", "AwaitingApproval", "wave/"+w.Name+"/approval",
					fmt.Sprintf("PackageRollout %s/%s: wave %s (%d revisions) waits for approval", o.Namespace, o.Name, w.Name, len(w.Revisions))))
			case w.State == configv1alpha1.WaveFailed:
				msg := fmt.Sprintf("PackageRollout %s/%s: wave %s failed (%d of %d targets failed)", o.Namespace, o.Name, w.Name, w.Failed, w.Targets)
				if o.Status.Blocked != "" {
					msg += ": " + o.Status.Blocked
				}
				out = append(out, ev("PackageRollout", "WaveFailed", "wave/"+w.Name+"/failed", msg))
			}
			if w.RolledBack > 0 {
				out = append(out, ev("PackageRollout", "RolledBack", fmt.Sprintf("wave/%s/rolledback/%d", w.Name, w.RolledBack),
					fmt.Sprintf("PackageRollout %s/%s: wave %s rolled back %d targets", o.Namespace, o.Name, w.Name, w.RolledBack)))
			}
		}
	case *configv1alpha1.PackageVariant:
		if c := meta.FindStatusCondition(o.Status.Conditions, configv1alpha1.StalledCondition); c != nil && c.Status == metav1.ConditionTrue {
			out = append(out, ev("PackageVariant", "Stalled", fmt.Sprintf("stalled/%s/%d", c.Reason, o.Generation),
				fmt.Sprintf("PackageVariant %s/%s stalled (%s): %s", o.Namespace, o.Name, c.Reason, c.Message)))
		}
	}
	return out
}

// Notifier watches the objects and sends their events.
type Notifier struct {
	// Secrets reads the namespaces' notification Secrets (the API
	// server: none is kept).
	Secrets client.Reader
	// HTTP sends the notifications (through the egress policy).
	HTTP *http.Client
	Log  logr.Logger
	// Elected is closed once this replica leads: only the leader sends.
	Elected <-chan struct{}
	// Backoff is the first wait before a failed send is tried again,
	// doubled each time (1s when 0); Attempts how many times at most (6
	// when 0).
	Backoff  time.Duration
	Attempts int

	mu sync.Mutex
	// shown are the events each object shows now (by UID): an event is
	// sent when an object comes to show it, and forgotten with the
	// object, so what is remembered is bounded by the objects watched.
	shown  map[types.UID]map[string]bool
	queues map[string]chan Event
	ctx    context.Context
}

// Handler is the informer event handler of the watched kinds: events an
// object shows when first listed are taken as already sent (a restart
// does not send them again); those it comes to show later are queued.
func (n *Notifier) Handler() toolscache.ResourceEventHandler {
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc:    func(obj any, initial bool) { n.observe(obj, initial) },
		UpdateFunc: func(_, obj any) { n.observe(obj, false) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if o, ok := obj.(client.Object); ok {
				n.mu.Lock()
				delete(n.shown, o.GetUID())
				n.mu.Unlock()
			}
		},
	}
}

func (n *Notifier) observe(obj any, initial bool) {
	o, ok := obj.(client.Object)
	if !ok {
		return
	}
	events := Events(o)
	now := make(map[string]bool, len(events))
	for _, e := range events {
		now[e.Key] = true
	}
	n.mu.Lock()
	if n.shown == nil {
		n.shown = map[types.UID]map[string]bool{}
	}
	before := n.shown[o.GetUID()]
	if len(now) == 0 {
		delete(n.shown, o.GetUID())
	} else {
		n.shown[o.GetUID()] = now
	}
	n.mu.Unlock()
	if initial {
		return
	}
	for _, e := range events {
		if !before[e.Key] {
			n.enqueue(e)
		}
	}
}

// queueSize bounds the events waiting in one namespace.
const queueSize = 256

// enqueue hands e to its namespace's sender, never waiting: when this
// replica does not lead, or the namespace's queue is full (its endpoint
// hangs), e is dropped and logged.
func (n *Notifier) enqueue(e Event) {
	select {
	case <-n.Elected:
	default:
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ctx == nil {
		return // not started
	}
	if n.queues == nil {
		n.queues = map[string]chan Event{}
	}
	q, ok := n.queues[e.Namespace]
	if !ok {
		q = make(chan Event, queueSize)
		n.queues[e.Namespace] = q
		go n.send(n.ctx, q)
	}
	select {
	case q <- e:
	default:
		n.Log.Info("notification dropped: the namespace's queue is full (its endpoint is slow or hangs)", "namespace", e.Namespace, "event", e.Key)
	}
}

// Start lets events be sent until ctx is done.
func (n *Notifier) Start(ctx context.Context) error {
	n.mu.Lock()
	n.ctx = ctx
	n.mu.Unlock()
	<-ctx.Done()
	return nil
}

// Started says whether Start runs.
func (n *Notifier) Started() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ctx != nil
}

// NeedLeaderElection is false: every replica watches (so that a new
// leader knows what was shown before), only the leader sends (Elected).
func (n *Notifier) NeedLeaderElection() bool { return false }

// send delivers one namespace's events in order.
func (n *Notifier) send(ctx context.Context, q <-chan Event) {
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-q:
			n.deliver(ctx, e)
		}
	}
}

// deliver sends e to its namespace's endpoint, trying again with backoff.
func (n *Notifier) deliver(ctx context.Context, e Event) {
	log := n.Log.WithValues("namespace", e.Namespace, "event", e.Key)
	address, body, err := n.request(ctx, e)
	if err != nil || address == "" {
		if err != nil {
			log.Info("notification not sent", "reason", err.Error())
		}
		return
	}
	wait, attempts := n.Backoff, n.Attempts
	if wait <= 0 {
		wait = time.Second
	}
	if attempts <= 0 {
		attempts = 6
	}
	for i := 1; ; i++ {
		err := n.post(ctx, address, body)
		if err == nil {
			return
		}
		if i == attempts {
			log.Info("notification not delivered; giving up", "attempts", i, "reason", err.Error())
			return
		}
		log.V(1).Info("notification not delivered; trying again", "attempt", i, "in", wait, "reason", err.Error())
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// request reads the namespace's Secret and makes the body ("" address:
// the namespace has no notifications).
func (n *Notifier) request(ctx context.Context, e Event) (string, []byte, error) {
	s := &corev1.Secret{}
	if err := n.Secrets.Get(ctx, types.NamespacedName{Namespace: e.Namespace, Name: SecretName}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil, nil
		}
		return "", nil, fmt.Errorf("reading secret %s/%s: %w", e.Namespace, SecretName, err)
	}
	address := strings.TrimSpace(string(s.Data[AddressKey]))
	if address == "" {
		return "", nil, fmt.Errorf("secret %s/%s has no %q", e.Namespace, SecretName, AddressKey)
	}
	var v any = e
	switch f := string(s.Data[FormatKey]); f {
	case "slack":
		v = map[string]string{"text": fmt.Sprintf("[%s] %s", e.Reason, e.Message)}
	case "", "generic":
	default:
		return "", nil, fmt.Errorf("secret %s/%s: format %q is not slack or generic", e.Namespace, SecretName, f)
	}
	body, err := json.Marshal(v)
	return address, body, err
}

// postTimeout bounds one attempt.
const postTimeout = 10 * time.Second

func (n *Notifier) post(ctx context.Context, address string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, postTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, address, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("the address is not a URL")
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := n.HTTP.Do(req)
	if err != nil {
		// The URL may hold a token (Slack's do): never print it.
		return fmt.Errorf("the endpoint did not answer: %s", classOf(err))
	}
	_ = res.Body.Close()
	if res.StatusCode >= 300 {
		return fmt.Errorf("the endpoint answered %s", res.Status)
	}
	return nil
}

// classOf says why a connection failed, without what answered.
func classOf(err error) string {
	if c := egress.Class(err); c != "" {
		return c
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s", postTimeout)
	}
	return "the connection failed"
}
