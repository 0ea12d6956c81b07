// Package rpkg implements `scion rpkg`: package revisions in a cluster,
// created and moved through their lifecycle by writing PackageRevision
// objects and waiting for the controller to act.
package rpkg

import (
	"context"
	"errors"
	"fmt"
	authenticationv1 "k8s.io/api/authentication/v1"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/oci"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/suggest"
)

// Client works on the PackageRevisions of one namespace.
type Client struct {
	client.Client
	Namespace string
	// Timeout bounds each wait for the controller; 0 means do not wait.
	Timeout time.Duration
	// Poll is the interval of waits.
	Poll time.Duration
	// OCI configures the registry client for Repositories of type oci
	// (credentials from the Docker config file when its Keychain is
	// nil).
	OCI oci.Options

	// whoami is the user the API server authenticates this client as,
	// once it has said (Whoami).
	whoamiMu sync.Mutex
	whoami   string
}

// service is the package service the CLI's writes go through, as the
// controllers' do.
func (c *Client) service() *pkgservice.Service {
	return &pkgservice.Service{Client: c.Client, APIReader: c.Client}
}

// Get returns one PackageRevision.
func (c *Client) Get(ctx context.Context, name string) (*porchv1alpha1.PackageRevision, error) {
	pr := &porchv1alpha1.PackageRevision{}
	if err := c.Client.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: name}, pr); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, suggest.NotFound(ctx, c.Client, &porchv1alpha1.PackageRevisionList{}, "package revision", c.Namespace, name)
		}
		return nil, err
	}
	return pr, nil
}

// CheckNamespace fails when the client's namespace does not exist (a
// namespace it may not read is taken to exist).
func (c *Client) CheckNamespace(ctx context.Context) error {
	if err := c.Client.Get(ctx, types.NamespacedName{Name: c.Namespace}, &corev1.Namespace{}); apierrors.IsNotFound(err) {
		return fmt.Errorf("namespace %s does not exist", c.Namespace)
	}
	return nil
}

// Filter narrows List.
type Filter struct {
	Repository string
	Package    string
	// NameContains keeps the revisions whose package name contains it
	// (porchctl's rpkg get --name).
	NameContains string
	Lifecycle    porchv1alpha1.Lifecycle
}

// List returns the namespace's PackageRevisions matching f, sorted by
// repository, package and revision.
func (c *Client) List(ctx context.Context, f Filter) ([]porchv1alpha1.PackageRevision, error) {
	// Selected on the spec, server side (the CRD's selectable fields):
	// a revision just created, not shown by the controller yet (so
	// without its labels), is listed too, as kubectl lists it.
	fields := client.MatchingFields{}
	if f.Repository != "" {
		fields["spec.repository"] = f.Repository
	}
	if f.Package != "" {
		fields["spec.packageName"] = f.Package
	}
	list := &porchv1alpha1.PackageRevisionList{}
	if err := c.Client.List(ctx, list, client.InNamespace(c.Namespace), fields); err != nil {
		return nil, err
	}
	out := list.Items[:0]
	for _, pr := range list.Items {
		if (f.Lifecycle == "" || pr.GitLifecycle() == f.Lifecycle) && strings.Contains(pr.Spec.PackageName, f.NameContains) {
			out = append(out, pr)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Spec, out[j].Spec
		if a.Repository != b.Repository {
			return a.Repository < b.Repository
		}
		if a.PackageName != b.PackageName {
			return a.PackageName < b.PackageName
		}
		if a.Revision != b.Revision {
			return a.Revision < b.Revision
		}
		return a.WorkspaceName < b.WorkspaceName
	})
	return out, nil
}

// CreateOptions name a new revision.
type CreateOptions struct {
	Repository, Package, Workspace string
}

// Init creates a new package.
func (c *Client) Init(ctx context.Context, o CreateOptions, init porchv1alpha1.PackageInitTaskSpec) (*porchv1alpha1.PackageRevision, error) {
	return c.create(ctx, o, porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeInit, Init: &init})
}

// Clone creates a draft cloned from the revision source.
func (c *Client) Clone(ctx context.Context, source string, o CreateOptions) (*porchv1alpha1.PackageRevision, error) {
	if _, err := c.Get(ctx, source); err != nil {
		return nil, err
	}
	return c.create(ctx, o, porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeClone, Clone: &porchv1alpha1.PackageCloneTaskSpec{UpstreamRef: porchv1alpha1.UpstreamPackage{Name: source}}})
}

// CloneGit creates a draft cloned from a package in a git repository no
// Repository names (its URL, ref, directory and the Secret of its
// credentials); the package is read once, when the draft is written.
func (c *Client) CloneGit(ctx context.Context, git porchv1alpha1.GitPackage, o CreateOptions) (*porchv1alpha1.PackageRevision, error) {
	return c.create(ctx, o, porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeClone, Clone: &porchv1alpha1.PackageCloneTaskSpec{UpstreamRef: porchv1alpha1.UpstreamPackage{Git: &git}}})
}

// Copy creates a new draft of source's package from source.
func (c *Client) Copy(ctx context.Context, source, workspace string) (*porchv1alpha1.PackageRevision, error) {
	src, err := c.Get(ctx, source)
	if err != nil {
		return nil, err
	}
	return c.create(ctx, CreateOptions{Repository: src.Spec.Repository, Package: src.Spec.PackageName, Workspace: workspace},
		porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeEdit, Edit: &porchv1alpha1.PackageEditTaskSpec{SourceRef: porchv1alpha1.PackageRevisionRef{Name: source}}})
}

// Upgrade creates a new draft of local's package, 3-way updated from the
// upstream revision local was cloned from (the published revision its
// upstreamLock records) to newUpstream.
func (c *Client) Upgrade(ctx context.Context, local, newUpstream, workspace string, strategy kptfilev1.UpdateStrategy) (*porchv1alpha1.PackageRevision, error) {
	if _, err := c.Get(ctx, newUpstream); err != nil {
		return nil, err
	}
	lpr, err := c.Get(ctx, local)
	if err != nil {
		return nil, err
	}
	old, err := c.lockedUpstream(ctx, lpr)
	if err != nil {
		return nil, err
	}
	return c.create(ctx, CreateOptions{Repository: lpr.Spec.Repository, Package: lpr.Spec.PackageName, Workspace: workspace},
		porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeUpgrade, Upgrade: &porchv1alpha1.PackageUpgradeTaskSpec{
			OldUpstream: porchv1alpha1.PackageRevisionRef{Name: old.Name}, NewUpstream: porchv1alpha1.PackageRevisionRef{Name: newUpstream},
			LocalPackageRevisionRef: porchv1alpha1.PackageRevisionRef{Name: local}, Strategy: strategy,
		}})
}

// lockedUpstream reads the published revision the upstreamLock of lpr
// records (pkgservice.LockedRevision).
func (c *Client) lockedUpstream(ctx context.Context, lpr *porchv1alpha1.PackageRevision) (*porchv1alpha1.PackageRevision, error) {
	local := lpr.Name
	lock := lpr.Status.UpstreamLock
	if lock.Commit() == "" {
		return nil, fmt.Errorf("%s records no upstream commit (status.upstreamLock); it was not cloned from a package revision", local)
	}
	name, err := pkgservice.LockedRevision(ctx, c.Client, c.Namespace, lock)
	if err != nil {
		return nil, err
	}
	if name == "" {
		return nil, fmt.Errorf("%s was cloned from %s at %s (commit %.12s), which is no published revision of a Repository of this namespace: name the new upstream with --upstream, or register that repository",
			local, lock.Source(), lock.Ref(), lock.Commit())
	}
	return c.Get(ctx, name)
}

// UpstreamRevision names the revision of local's upstream package (the
// package of the revision local was cloned from, status.upstreamLock)
// with the given revision number, or its latest published revision when
// revision is 0: what porchctl's rpkg upgrade --revision upgrades to.
func (c *Client) UpstreamRevision(ctx context.Context, local string, revision int) (string, error) {
	lpr, err := c.Get(ctx, local)
	if err != nil {
		return "", err
	}
	from, err := c.lockedUpstream(ctx, lpr)
	if err != nil {
		return "", err
	}
	all, err := c.List(ctx, Filter{Repository: from.Spec.Repository, Package: from.Spec.PackageName})
	if err != nil {
		return "", err
	}
	var latest *porchv1alpha1.PackageRevision
	for i := range all {
		pr := &all[i]
		if pr.Spec.Repository != from.Spec.Repository || pr.Spec.PackageName != from.Spec.PackageName || pr.GitLifecycle() != porchv1alpha1.LifecyclePublished {
			continue
		}
		if revision > 0 && pr.Spec.Revision == revision {
			return pr.Name, nil
		}
		if latest == nil || pr.Spec.Revision > latest.Spec.Revision {
			latest = pr
		}
	}
	if revision > 0 || latest == nil {
		return "", fmt.Errorf("%s in %s has no published revision %d", from.Spec.PackageName, from.Spec.Repository, revision)
	}
	return latest.Name, nil
}

func (c *Client) create(ctx context.Context, o CreateOptions, task porchv1alpha1.Task) (*porchv1alpha1.PackageRevision, error) {
	if err := c.remoteAvailable(ctx, o.Repository); err != nil {
		return nil, err
	}
	pr := &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Name: pkgservice.ObjectName(o.Repository, o.Package, o.Workspace), Namespace: c.Namespace},
		Spec: porchv1alpha1.PackageRevisionSpec{PackageName: o.Package, Repository: o.Repository, WorkspaceName: o.Workspace,
			Lifecycle: porchv1alpha1.LifecycleDraft, Tasks: []porchv1alpha1.Task{task}},
	}
	if err := c.Client.Create(ctx, pr); err != nil {
		return nil, err
	}
	return c.wait(ctx, pr.Name)
}

// ErrRemoteUnavailable is matched when a Repository's git server is known
// not to answer: nothing is created, rather than waited for in vain.
var ErrRemoteUnavailable = errors.New("the repository's remote is unavailable")

// remoteAvailable fails at once when the Repository says its remote does
// not answer (its message says until when it is left alone). A Repository
// that cannot be read is left to the controller to report.
func (c *Client) remoteAvailable(ctx context.Context, name string) error {
	repo := &configv1alpha1.Repository{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, repo); err != nil {
		return nil
	}
	if r := meta.FindStatusCondition(repo.Status.Conditions, configv1alpha1.ReadyCondition); r != nil && r.Reason == configv1alpha1.RemoteUnavailableReason {
		return fmt.Errorf("repository %s: %s; nothing was created: %w", name, r.Message, ErrRemoteUnavailable)
	}
	return nil
}

// Propose moves a Draft to Proposed.
func (c *Client) Propose(ctx context.Context, name string) (*porchv1alpha1.PackageRevision, error) {
	return c.move(ctx, name, nil, porchv1alpha1.LifecycleProposed)
}

// Approve publishes a Proposed revision, recording the user approving as
// the API server knows them (the admission policy admits no other name).
// An approval the API server refuses (unmet readiness gates) is an error
// (ErrRefused) and nothing is recorded; one the controller cannot carry
// out yet (a conflict) is recorded and pending: the revision returned
// shows why (ShownLifecycle).
func (c *Client) Approve(ctx context.Context, name string) (*porchv1alpha1.PackageRevision, error) {
	approver, err := c.Whoami(ctx)
	if err != nil {
		return nil, err
	}
	pr, err := c.move(ctx, name, map[string]string{porchv1alpha1.ApprovedByAnnotation: approver}, porchv1alpha1.LifecyclePublished, porchv1alpha1.LifecycleProposed)
	if errors.Is(err, ErrNotReady) && pr != nil && pr.Spec.Lifecycle == porchv1alpha1.LifecyclePublished && pr.GitLifecycle() == porchv1alpha1.LifecycleProposed {
		// Recorded, and waiting for what only git can tell (a conflict
		// with the lock): a pending approval, shown as such
		// (ShownLifecycle), not a refusal.
		return pr, nil
	}
	return pr, err
}

// Whoami returns the user name the API server authenticates this client
// as (a SelfSubjectReview). The answer is kept for the Client's life; a
// failure is not (a long-lived client, such as the console's, asks again).
func (c *Client) Whoami(ctx context.Context) (string, error) {
	c.whoamiMu.Lock()
	defer c.whoamiMu.Unlock()
	if c.whoami != "" {
		return c.whoami, nil
	}
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Client.Create(ctx, review); err != nil {
		return "", fmt.Errorf("asking the API server who you are (SelfSubjectReview): %w", err)
	}
	c.whoami = review.Status.UserInfo.Username
	return c.whoami, nil
}

// Reject sends a Proposed revision back to Draft, a DeletionProposed one
// back to Published, and withdraws a pending approval (one git has not
// carried out yet): the revision stays Proposed.
func (c *Client) Reject(ctx context.Context, name string) (*porchv1alpha1.PackageRevision, error) {
	pr, err := c.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	switch {
	case pr.Spec.Lifecycle == porchv1alpha1.LifecyclePublished && pr.GitLifecycle() == porchv1alpha1.LifecycleProposed:
		// A pending approval (git has it Proposed): withdrawn, with its
		// record; the revision stays Proposed.
		return c.withdraw(ctx, pr)
	}
	switch pr.Spec.Lifecycle {
	case porchv1alpha1.LifecycleProposed:
		return c.move(ctx, name, nil, porchv1alpha1.LifecycleDraft)
	case porchv1alpha1.LifecycleDeletionProposed:
		return c.move(ctx, name, nil, porchv1alpha1.LifecyclePublished)
	default:
		return nil, fmt.Errorf("%s is %s; only Proposed and DeletionProposed revisions can be rejected", name, pr.Spec.Lifecycle)
	}
}

// withdraw takes back a pending approval: spec.lifecycle Proposed again,
// the approval record removed (checked against the version read). When
// the revision changed since it was read, it is read again: still
// pending (only its status moved), the withdrawal is tried again;
// otherwise (git published it, someone else withdrew it) it says what the
// revision is now and that nothing was changed.
func (c *Client) withdraw(ctx context.Context, pr *porchv1alpha1.PackageRevision) (*porchv1alpha1.PackageRevision, error) {
	name := pr.Name
	for {
		patch := client.MergeFromWithOptions(pr.DeepCopy(), client.MergeFromWithOptimisticLock{})
		pr.Spec.Lifecycle = porchv1alpha1.LifecycleProposed
		delete(pr.Annotations, porchv1alpha1.ApprovedByAnnotation)
		err := c.Client.Patch(ctx, pr, patch)
		if apierrors.IsConflict(err) {
			cur, gerr := c.Get(ctx, name)
			if gerr != nil {
				return nil, gerr
			}
			if cur.Spec.Lifecycle == porchv1alpha1.LifecyclePublished && cur.GitLifecycle() == porchv1alpha1.LifecycleProposed {
				pr = cur // still pending: again
				continue
			}
			return cur, fmt.Errorf("%s: it is now %s; nothing was changed: %w", name, describeLifecycle(cur), ErrLost)
		}
		if err != nil {
			return nil, refusal(name, err)
		}
		return c.wait(ctx, name)
	}
}

// ProposeDelete moves a Published revision to DeletionProposed.
func (c *Client) ProposeDelete(ctx context.Context, name string) (*porchv1alpha1.PackageRevision, error) {
	return c.move(ctx, name, nil, porchv1alpha1.LifecycleDeletionProposed)
}

// Consequence says in a sentence what deleting a revision means beyond
// the revision itself ("" when nothing): a PackageVariant that writes the
// package makes it again.
func Consequence(pr *porchv1alpha1.PackageRevision) string {
	ref := metav1.GetControllerOf(pr)
	if ref == nil || ref.Kind != "PackageVariant" {
		return ""
	}
	return fmt.Sprintf("PackageVariant %s writes package %s in %s and makes a new draft of it from its upstream; to remove the package for good, delete the PackageVariant (its deletionPolicy decides what happens to its revisions)",
		ref.Name, pr.Spec.PackageName, pr.Spec.Repository)
}

// Delete deletes a revision (the controller removes it from git) and
// waits until it is gone.
func (c *Client) Delete(ctx context.Context, name string) error {
	pr, err := c.Get(ctx, name)
	if err != nil {
		return err
	}
	if err := c.Client.Delete(ctx, pr); client.IgnoreNotFound(err) != nil {
		return err
	}
	if c.Timeout <= 0 {
		return nil
	}
	err = wait.PollUntilContextTimeout(ctx, c.poll(), c.Timeout, true, func(ctx context.Context) (bool, error) {
		// Gone, or replaced: a variant that writes the package may show
		// its new draft under the same name at once.
		cur := &porchv1alpha1.PackageRevision{}
		err := c.Client.Get(ctx, client.ObjectKeyFromObject(pr), cur)
		return apierrors.IsNotFound(err) || err == nil && cur.UID != pr.UID, client.IgnoreNotFound(err)
	})
	if err != nil {
		cur := &porchv1alpha1.PackageRevision{}
		if c.Client.Get(ctx, client.ObjectKeyFromObject(pr), cur) == nil && cur.UID == pr.UID {
			if r := Ready(cur); r.Message != "" {
				return fmt.Errorf("%s is not deleted yet: %s", name, r.Message)
			}
		}
		return fmt.Errorf("%s is not deleted yet: %w", name, err)
	}
	return nil
}

// move sets spec.lifecycle (and annotations) when the revision is in one
// of from (any when empty), and waits for the controller.
func (c *Client) move(ctx context.Context, name string, annotations map[string]string, to porchv1alpha1.Lifecycle, from ...porchv1alpha1.Lifecycle) (*porchv1alpha1.PackageRevision, error) {
	for {
		pr, err := c.Get(ctx, name)
		if err != nil {
			return nil, err
		}
		if len(from) > 0 && pr.Spec.Lifecycle != from[0] && pr.Spec.Lifecycle != to {
			return nil, fmt.Errorf("%s is %s; it must be %s first", name, pr.Spec.Lifecycle, from[0])
		}
		read := pr.Spec.Lifecycle
		// Against the version read: of two people moving one revision at
		// once (an approval and a rejection), exactly one wins.
		patch := client.MergeFromWithOptions(pr.DeepCopy(), client.MergeFromWithOptimisticLock{})
		pr.Spec.Lifecycle = to
		for k, v := range annotations {
			if pr.Annotations == nil {
				pr.Annotations = map[string]string{}
			}
			pr.Annotations[k] = v
		}
		err = c.Client.Patch(ctx, pr, patch)
		if apierrors.IsConflict(err) {
			cur, gerr := c.Get(ctx, name)
			if gerr != nil {
				return nil, gerr
			}
			if cur.Spec.Lifecycle == read {
				continue // something else changed (its status, a label): again
			}
			return cur, fmt.Errorf("%s: it is now %s; nothing was changed: %w", name, describeLifecycle(cur), ErrLost)
		}
		if err != nil {
			return nil, refusal(name, err)
		}
		got, err := c.wait(ctx, name)
		if err == nil && got.Spec.Lifecycle == porchv1alpha1.LifecyclePublished && read != porchv1alpha1.LifecycleDraft &&
			(to == porchv1alpha1.LifecycleDraft || to == porchv1alpha1.LifecycleProposed) {
			// Taking back an approval git had carried out first (a
			// withdrawal or rejection that came too late): the
			// controller shows it Published. (A proposal that a rollout
			// then approved was carried out: it is not this.)
			return got, fmt.Errorf("%s: git published it before this request was carried out: it is now %s; nothing was changed: %w", name, describeLifecycle(got), ErrLost)
		}
		if got != nil && to == porchv1alpha1.LifecyclePublished && got.Spec.Lifecycle != porchv1alpha1.LifecyclePublished {
			// An approval someone took back (scion rpkg reject of a
			// pending approval) before git carried it out: theirs won.
			return got, fmt.Errorf("%s: it is now %s (the approval was taken back before git carried it out); nothing was changed: %w", name, describeLifecycle(got), ErrLost)
		}
		return got, err
	}
}

// ErrLost is matched when another writer moved the revision first: the
// request was not carried out.
var ErrLost = errors.New("someone else moved it first")

// describeLifecycle is a revision's lifecycle, with its approver once
// Published.
func describeLifecycle(pr *porchv1alpha1.PackageRevision) string {
	out := string(pr.Spec.Lifecycle)
	if out == "" {
		out = string(porchv1alpha1.LifecycleDraft)
	}
	if by := pr.Annotations[porchv1alpha1.ApprovedByAnnotation]; by != "" && pr.Spec.Lifecycle == porchv1alpha1.LifecyclePublished {
		out += " (approved by " + by + ")"
	}
	return out
}

// ErrRefused is matched when the API server refused a change (the
// lifecycle policy, validation): nothing was recorded.
var ErrRefused = errors.New("refused")

// refusal says what the API server refused, without the admission
// policy's preamble.
func refusal(name string, err error) error {
	if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
		return fmt.Errorf("%s: %w", name, err)
	}
	msg := err.Error()
	if _, why, ok := strings.Cut(msg, "denied request: "); ok {
		msg = why
	}
	return fmt.Errorf("%s: %s: %w", name, msg, ErrRefused)
}

// Ready returns the Ready condition of a PackageRevision.
func Ready(pr *porchv1alpha1.PackageRevision) porchv1alpha1.Condition {
	for _, c := range pr.Status.Conditions {
		if c.Type == configv1alpha1.ReadyCondition {
			return c
		}
	}
	return porchv1alpha1.Condition{Type: configv1alpha1.ReadyCondition, Status: "Unknown"}
}

// ErrNotReady is matched when the controller reports it cannot do what
// was asked (the message says why).
var ErrNotReady = errors.New("not ready")

// wait waits until the controller has handled the object's spec (Ready
// True at the current generation), or reports why it has not.
func (c *Client) wait(ctx context.Context, name string) (*porchv1alpha1.PackageRevision, error) {
	pr, err := c.Get(ctx, name)
	if err != nil || c.Timeout <= 0 {
		return pr, err
	}
	var last *porchv1alpha1.PackageRevision
	err = wait.PollUntilContextTimeout(ctx, c.poll(), c.Timeout, true, func(ctx context.Context) (bool, error) {
		cur, err := c.Get(ctx, name)
		if err != nil {
			return false, err
		}
		last = cur
		r := Ready(cur)
		fresh := r.ObservedGeneration == cur.Generation
		if r.Reason == porchv1alpha1.ReadinessGatesNotMetReason && len(pkgservice.UnmetGates(cur.Spec.ReadinessGates, cur.Status.Conditions)) == 0 {
			fresh = false // the gates were met since: the controller has not looked again yet
		}
		if fresh && r.Status == "False" && r.Reason != "" && r.Reason != porchv1alpha1.RepositoryUnavailableReason {
			return false, fmt.Errorf("%s: %s (%s): %w", name, r.Message, r.Reason, ErrNotReady)
		}
		// Done when the verdict is for this spec and git has what it asks.
		want := cur.Spec.Lifecycle
		if want == "" {
			want = porchv1alpha1.LifecycleDraft
		}
		return cur.Status.ObservedGeneration == cur.Generation && r.Status == "True" && cur.GitLifecycle() == want, nil
	})
	if err != nil {
		if errors.Is(err, ErrNotReady) {
			return last, err
		}
		msg := "the controller has not acted yet"
		if last != nil && Ready(last).Message != "" {
			msg = Ready(last).Message
		}
		return last, fmt.Errorf("%s: timed out after %s: %s", name, c.Timeout, msg)
	}
	return last, nil
}

func (c *Client) poll() time.Duration {
	if c.Poll > 0 {
		return c.Poll
	}
	return 250 * time.Millisecond
}

// SetCondition sets a package condition on a revision (written into a
// draft's Kptfile by the controller).
func (c *Client) SetCondition(ctx context.Context, name string, cond porchv1alpha1.Condition) (*porchv1alpha1.PackageRevision, error) {
	if porchv1alpha1.IsControllerCondition(cond.Type) {
		return nil, fmt.Errorf("%s is set by the controller; choose another condition type", cond.Type)
	}
	pr, err := c.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	_, err = c.service().WriteStatus(ctx, pr, func(pr *porchv1alpha1.PackageRevision) bool {
		return pkgservice.SetConditions(&pr.Status.Conditions, cond)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return pr, nil
}
