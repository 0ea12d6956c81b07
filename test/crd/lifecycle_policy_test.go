package crd

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	kptfilev1 "github.com/scion-dev/scion/api/kptfile/v1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

// installUserRoles creates the viewer, editor and approver ClusterRoles
// config/rbac ships.
func installUserRoles(t *testing.T) {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "config", "rbac", "user_roles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		role := &rbacv1.ClusterRole{}
		if err := dec.Decode(role); err != nil {
			break
		}
		if err := k8sClient.Create(context.Background(), role); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

// as returns a client that impersonates user, bound to role in ns.
func as(t *testing.T, ns, user, role string) client.Client {
	t.Helper()
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role, Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "User", Name: user}}}
	if err := k8sClient.Create(context.Background(), rb); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func revision(ns, ws string, lc porchv1alpha1.Lifecycle) *porchv1alpha1.PackageRevision {
	return &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Name: "r.app." + ws, Namespace: ns},
		Spec:       porchv1alpha1.PackageRevisionSpec{PackageName: "app", Repository: "r", WorkspaceName: ws, Lifecycle: lc},
	}
}

// move sets a revision's lifecycle (and approver annotation) as c's user.
func move(c client.Client, pr *porchv1alpha1.PackageRevision, lc porchv1alpha1.Lifecycle, approvedBy string) error {
	cur := &porchv1alpha1.PackageRevision{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(pr), cur); err != nil {
		return err
	}
	cur.Spec.Lifecycle = lc
	if approvedBy != "" {
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[porchv1alpha1.ApprovedByAnnotation] = approvedBy
	}
	return c.Update(context.Background(), cur)
}

// TestLifecyclePolicy: the API server, not the CLI, enforces the
// lifecycle: moves go in order, approving needs its own permission and
// records the user who approved, a Published revision is not deleted.
// Users are impersonated with the roles config/rbac ships.
func TestLifecyclePolicy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	installUserRoles(t)
	alice := as(t, ns, "alice", "scion-editor")
	bob := as(t, ns, "bob", "scion-approver")
	viewer := as(t, ns, "victor", "scion-viewer")

	draft := revision(ns, "draft", porchv1alpha1.LifecycleDraft)
	g.Expect(alice.Create(ctx, draft)).To(Succeed(), "editors create drafts")
	g.Expect(viewer.Create(ctx, revision(ns, "nope", porchv1alpha1.LifecycleDraft))).NotTo(Succeed(), "viewers do not")

	// Skipping Proposed is refused (the policy may take a moment to load).
	g.Eventually(func() error { return move(alice, draft, porchv1alpha1.LifecyclePublished, "alice") }, 30*time.Second, 200*time.Millisecond).
		Should(MatchError(ContainSubstring("spec.lifecycle: a Draft revision cannot become Published (Draft -> Proposed -> Published -> DeletionProposed")))
	g.Expect(move(alice, draft, porchv1alpha1.LifecycleProposed, "")).To(Succeed(), "editors propose")

	// An editor cannot approve, even naming herself.
	err := move(alice, draft, porchv1alpha1.LifecyclePublished, "alice")
	g.Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(ContainSubstring("spec.lifecycle: alice may not approve PackageRevision " + draft.Name + ": approving needs update on packagerevisions/approval (the scion-approver role)")))
	// An approver cannot record someone else as the approver.
	g.Expect(move(bob, draft, porchv1alpha1.LifecyclePublished, "mallory")).To(MatchError(ContainSubstring(
		"metadata.annotations[porch.kpt.dev/approved-by]: the approver recorded must be the user approving (bob); scion rpkg approve sets it")))
	g.Expect(move(bob, draft, porchv1alpha1.LifecyclePublished, "")).To(MatchError(ContainSubstring("the approver recorded must be the user approving (bob)")))
	g.Expect(move(bob, draft, porchv1alpha1.LifecyclePublished, "bob")).To(Succeed(), "the approver approves as himself")

	// A Published revision is not deleted directly, by anyone (Scion's API
	// server refuses it before the storage's policy would).
	published := revision(ns, "published", porchv1alpha1.LifecyclePublished)
	g.Expect(k8sClient.Create(ctx, published)).To(Succeed())
	for _, c := range []client.Client{alice, bob} {
		err := c.Delete(ctx, published)
		g.Expect(err).To(MatchError(ContainSubstring("PackageRevision " + published.Name + " is Published and is not deleted directly, by anyone: propose its deletion first (scion rpkg propose-delete " + published.Name + "), then approve it (scion rpkg delete " + published.Name + ")")))
	}
	g.Expect(move(alice, published, porchv1alpha1.LifecycleDraft, "")).To(MatchError(ContainSubstring("a Published revision can only move to DeletionProposed")))
	// Proposing deletion is an edit; approving it is an approval.
	g.Expect(move(alice, published, porchv1alpha1.LifecycleDeletionProposed, "")).To(Succeed())
	err = alice.Delete(ctx, published)
	g.Expect(err).To(MatchError(ContainSubstring("alice may not approve the deletion of PackageRevision " + published.Name)))
	g.Expect(bob.Delete(ctx, published)).To(Succeed())

	// Drafts and proposals are deleted by editors.
	other := revision(ns, "other", porchv1alpha1.LifecycleDraft)
	g.Expect(alice.Create(ctx, other)).To(Succeed())
	g.Expect(alice.Delete(ctx, other)).To(Succeed())
}

// A PackageRollout publishes revisions, so creating or changing one needs
// the approval permission, whoever's RBAC lets them write the object; and
// approving a wave is recorded as the user who does it.
func TestRolloutApprovalPolicy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	installUserRoles(t)
	// A role that may write rollouts but not approve revisions.
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "rollout-writer-" + ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"config.porch.kpt.dev"}, Resources: []string{"packagerollouts"}, Verbs: []string{"get", "create", "update", "patch"}}}}
	g.Expect(k8sClient.Create(ctx, role)).To(Succeed())
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), role) })
	eve := as(t, ns, "eve", role.Name)
	bob := as(t, ns, "bob", "scion-approver")
	ro := func(name string) *configv1alpha1.PackageRollout {
		return &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: configv1alpha1.PackageRolloutSpec{
			RevisionSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Waves:            []configv1alpha1.RolloutWave{{Name: "canary"}}, Approval: configv1alpha1.RolloutApprovalManual}}
	}
	g.Eventually(func() error { return eve.Create(ctx, ro("by-eve")) }, 10*time.Second, 100*time.Millisecond).Should(
		MatchError(ContainSubstring("eve may not create or change PackageRollout by-eve: a rollout publishes revisions, which needs update on packagerevisions/approval")))
	mine := ro("by-bob")
	g.Expect(bob.Create(ctx, mine)).To(Succeed(), "approvers create rollouts")

	approve := func(c client.Client, by string) error {
		cur := &configv1alpha1.PackageRollout{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(mine), cur); err != nil {
			return err
		}
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Spec.ApprovedWaves = []string{"canary"}
		cur.Annotations = map[string]string{configv1alpha1.WaveApprovedByAnnotation: by, configv1alpha1.WaveApprovalPrefix + "canary": by}
		return c.Patch(ctx, cur, patch)
	}
	g.Expect(approve(eve, "eve")).To(MatchError(ContainSubstring("eve may not create or change PackageRollout by-bob")), "writing the object is not approving")
	g.Expect(approve(bob, "alice")).To(MatchError(ContainSubstring("the approver recorded must be the user approving the wave (bob)")))
	g.Expect(approve(bob, "bob")).To(Succeed())
}

// Approval records cannot be forged: a new revision starts as Draft and
// without an approval, the approval record is written only by the
// controller or by the approver it names, the status fields that say what
// git holds only by the controller, and who approved a wave only when
// approving it, as oneself.
func TestLifecyclePolicy_forgery(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	installUserRoles(t)
	alice := as(t, ns, "alice", "scion-editor")
	bob := as(t, ns, "bob", "scion-approver")
	carol := as(t, ns, "carol", "scion-approver")

	forged := revision(ns, "forged", porchv1alpha1.LifecyclePublished)
	forged.Annotations = map[string]string{porchv1alpha1.ApprovedByAnnotation: "alice"}
	g.Eventually(func() error { return alice.Create(ctx, forged.DeepCopy()) }, 30*time.Second, 200*time.Millisecond).Should(
		MatchError(ContainSubstring("spec.lifecycle: a new PackageRevision starts as Draft, not Published")))
	g.Expect(bob.Create(ctx, forged.DeepCopy())).To(MatchError(ContainSubstring("a new PackageRevision starts as Draft, not Published")),
		"approving is a move, not a way to create")
	withRecord := revision(ns, "with-record", porchv1alpha1.LifecycleDraft)
	withRecord.Annotations = map[string]string{porchv1alpha1.ApprovedByAnnotation: "bob"}
	g.Expect(alice.Create(ctx, withRecord)).To(MatchError(ContainSubstring("metadata.annotations[porch.kpt.dev/approved-by]: a new PackageRevision has no approval")))

	// The controller (here: the admin, who holds packagerevisions/sync)
	// shows what git has: a revision bob published.
	published := revision(ns, "published", porchv1alpha1.LifecyclePublished)
	published.Annotations = map[string]string{porchv1alpha1.ApprovedByAnnotation: "bob"}
	g.Expect(k8sClient.Create(ctx, published)).To(Succeed())
	published.Status.PublishedBy = "bob"
	published.Status.Commit = "0123456789abcdef0123456789abcdef01234567"
	g.Expect(k8sClient.Status().Update(ctx, published)).To(Succeed())

	setRecord := func(c client.Client, value *string) error {
		cur := &porchv1alpha1.PackageRevision{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(published), cur); err != nil {
			return err
		}
		patch := client.MergeFrom(cur.DeepCopy())
		if value == nil {
			delete(cur.Annotations, porchv1alpha1.ApprovedByAnnotation)
		} else {
			cur.Annotations[porchv1alpha1.ApprovedByAnnotation] = *value
		}
		return c.Patch(ctx, cur, patch)
	}
	name := func(s string) *string { return &s }
	g.Expect(setRecord(alice, name("alice"))).To(MatchError(ContainSubstring(
		`metadata.annotations[porch.kpt.dev/approved-by]: alice may not change the approval record of PackageRevision r.app.published (from "bob" to "alice")`)))
	g.Expect(setRecord(alice, nil)).To(MatchError(ContainSubstring("alice may not change the approval record")), "nor remove it")
	g.Expect(setRecord(carol, name("mallory"))).To(MatchError(ContainSubstring("carol may not change the approval record")),
		"an approver records only their own approval")

	// Status: people set conditions; the rest says what git holds.
	setStatus := func(c client.Client, edit func(*porchv1alpha1.PackageRevisionStatus)) error {
		cur := &porchv1alpha1.PackageRevision{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(published), cur); err != nil {
			return err
		}
		patch := client.MergeFrom(cur.DeepCopy())
		edit(&cur.Status)
		return c.Status().Patch(ctx, cur, patch)
	}
	g.Expect(setStatus(alice, func(s *porchv1alpha1.PackageRevisionStatus) { s.PublishedBy = "alice" })).To(MatchError(ContainSubstring(
		"status: alice may change only status.conditions of PackageRevision r.app.published")))
	g.Expect(setStatus(carol, func(s *porchv1alpha1.PackageRevisionStatus) { s.Commit = "" })).To(MatchError(ContainSubstring(
		"carol may change only status.conditions")))
	g.Expect(setStatus(alice, func(s *porchv1alpha1.PackageRevisionStatus) {
		s.Conditions = append(s.Conditions, porchv1alpha1.Condition{Type: "example.com/reviewed", Status: "True"})
	})).To(Succeed(), "editors set conditions")
	cur := &porchv1alpha1.PackageRevision{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(published), cur)).To(Succeed())
	g.Expect(cur.Status.PublishedBy).To(Equal("bob"))
	g.Expect(cur.Annotations).To(HaveKeyWithValue(porchv1alpha1.ApprovedByAnnotation, "bob"))

	// Who approved a wave is written when approving it, as oneself.
	ro := &configv1alpha1.PackageRollout{ObjectMeta: metav1.ObjectMeta{Name: "waves", Namespace: ns}, Spec: configv1alpha1.PackageRolloutSpec{
		RevisionSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Waves:            []configv1alpha1.RolloutWave{{Name: "canary"}, {Name: "rest"}}, Approval: configv1alpha1.RolloutApprovalManual}}
	g.Expect(bob.Create(ctx, ro)).To(Succeed())
	approveWave := func(c client.Client, waves []string, by string) error {
		cur := &configv1alpha1.PackageRollout{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ro), cur); err != nil {
			return err
		}
		patch := client.MergeFrom(cur.DeepCopy())
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[configv1alpha1.WaveApprovedByAnnotation] = by
		for _, w := range waves {
			if !slices.Contains(cur.Spec.ApprovedWaves, w) {
				cur.Annotations[configv1alpha1.WaveApprovalPrefix+w] = by // as scion rollout approve records it
			}
		}
		cur.Spec.ApprovedWaves = waves
		return c.Patch(ctx, cur, patch)
	}
	g.Expect(approveWave(bob, []string{"canary"}, "bob")).To(Succeed())
	g.Expect(approveWave(carol, []string{"canary"}, "alice")).To(MatchError(ContainSubstring(
		`metadata.annotations[config.porch.kpt.dev/wave-approved-by]: carol may not change who approved a wave (from "bob" to "alice")`)))
	g.Expect(approveWave(carol, []string{"canary"}, "carol")).To(MatchError(ContainSubstring("carol may not change who approved a wave")),
		"not even to oneself, without approving a wave")
	// Each wave keeps its own record: written when approving the wave, as
	// oneself, and never rewritten or removed.
	record := func(c client.Client, waves []string, records map[string]string) error {
		cur := &configv1alpha1.PackageRollout{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ro), cur); err != nil {
			return err
		}
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Spec.ApprovedWaves = waves
		for k, v := range records {
			if v == "" {
				delete(cur.Annotations, k)
				continue
			}
			cur.Annotations[k] = v
		}
		return c.Patch(ctx, cur, patch)
	}
	g.Expect(record(carol, []string{"canary", "rest"}, map[string]string{configv1alpha1.WaveApprovedByAnnotation: "carol"})).To(MatchError(ContainSubstring(
		"metadata.annotations[wave-approved-by.config.porch.kpt.dev/<wave>]: approving rest records each wave as approved by the user approving it (carol)")),
		"each wave keeps its own record")
	g.Expect(approveWave(carol, []string{"canary", "rest"}, "carol")).To(Succeed(), "carol approves the next wave as herself")

	canary, rest := configv1alpha1.WaveApprovalPrefix+"canary", configv1alpha1.WaveApprovalPrefix+"rest"
	g.Expect(record(carol, []string{"canary", "rest"}, map[string]string{canary: "carol"})).To(MatchError(ContainSubstring(
		"carol may not write or change the record of a wave approval except when approving that wave")), "bob approved canary: carol cannot claim it")
	g.Expect(record(bob, []string{"canary", "rest"}, map[string]string{rest: "bob"})).To(MatchError(ContainSubstring("bob may not write or change the record of a wave approval")))
	g.Expect(record(bob, []string{"canary", "rest"}, map[string]string{rest: ""})).To(MatchError(ContainSubstring("bob may not write or change the record of a wave approval")), "nor remove it")
	got := &configv1alpha1.PackageRollout{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(ro), got)).To(Succeed())
	g.Expect(configv1alpha1.WaveApprover(got, "rest")).To(Equal("carol"))
}

// Approving a revision of a deployment repository whose readiness gates
// are not all True is refused at the door, naming each unmet gate with its
// condition's message; nothing is recorded, so nothing publishes later by
// itself.
func TestLifecyclePolicy_gatesAtApproval(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	installUserRoles(t)
	bob := as(t, ns, "bob", "scion-approver")

	pr := revision(ns, "gated", porchv1alpha1.LifecycleProposed)
	pr.Spec.ReadinessGates = []kptfilev1.ReadinessGate{{ConditionType: "example.com/canary"}, {ConditionType: "config.porch.kpt.dev/dependencies"}}
	g.Expect(k8sClient.Create(ctx, pr)).To(Succeed())
	pr.Status.Deployment = true
	pr.Status.Lifecycle = porchv1alpha1.LifecycleProposed
	pr.Status.Conditions = []porchv1alpha1.Condition{{Type: "config.porch.kpt.dev/dependencies", Status: "False", Reason: "DependencyPending",
		Message: "base 1.0.0 in base is draft: publish it"}}
	g.Expect(k8sClient.Status().Update(ctx, pr)).To(Succeed())

	g.Eventually(func() error { return move(bob, pr, porchv1alpha1.LifecyclePublished, "bob") }, 30*time.Second, 200*time.Millisecond).Should(MatchError(ContainSubstring(
		"spec.lifecycle: cannot publish r.app.gated into deployment repository r: readiness gates not met: example.com/canary (not set); config.porch.kpt.dev/dependencies (False: base 1.0.0 in base is draft: publish it). Nothing was recorded: approve again once they are True")))
	cur := &porchv1alpha1.PackageRevision{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pr), cur)).To(Succeed())
	g.Expect(cur.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecycleProposed), "nothing recorded")
	g.Expect(cur.Annotations).NotTo(HaveKey(porchv1alpha1.ApprovedByAnnotation))

	cur.Status.Conditions = []porchv1alpha1.Condition{{Type: "config.porch.kpt.dev/dependencies", Status: "True"}, {Type: "example.com/canary", Status: "True"}}
	g.Expect(k8sClient.Status().Update(ctx, cur)).To(Succeed())
	g.Expect(move(bob, pr, porchv1alpha1.LifecyclePublished, "bob")).To(Succeed(), "with every gate True, the approval goes through")

	// Outside deployment repositories gates do not hold publication.
	free := revision(ns, "free", porchv1alpha1.LifecycleProposed)
	free.Spec.ReadinessGates = []kptfilev1.ReadinessGate{{ConditionType: "example.com/canary"}}
	g.Expect(k8sClient.Create(ctx, free)).To(Succeed())
	g.Expect(move(bob, free, porchv1alpha1.LifecyclePublished, "bob")).To(Succeed())
}

// The gates hold an administrator approving as themselves too (scion rpkg
// approve with an admin kubeconfig), not the controller showing what git
// has (which records no approver of its own).
func TestLifecyclePolicy_gatesHoldAdminsApproving(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	pr := revision(ns, "gated", porchv1alpha1.LifecycleProposed)
	pr.Spec.ReadinessGates = []kptfilev1.ReadinessGate{{ConditionType: "example.com/canary"}}
	g.Expect(k8sClient.Create(ctx, pr)).To(Succeed())
	pr.Status.Deployment = true
	g.Expect(k8sClient.Status().Update(ctx, pr)).To(Succeed())
	admin, err := rpkgWhoami(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() error { return move(k8sClient, pr, porchv1alpha1.LifecyclePublished, admin) }, 30*time.Second, 200*time.Millisecond).Should(
		MatchError(ContainSubstring("readiness gates not met: example.com/canary (not set)")))
	g.Expect(move(k8sClient, pr, porchv1alpha1.LifecyclePublished, "")).To(Succeed(), "the controller showing git records no approver")
}

func rpkgWhoami(ctx context.Context) (string, error) {
	review := &authenticationv1.SelfSubjectReview{}
	if err := k8sClient.Create(ctx, review); err != nil {
		return "", err
	}
	return review.Status.UserInfo.Username, nil
}

// A pending approval (spec Published, git still Proposed: the controller
// waits on a conflict) can be withdrawn, back to Proposed with its record
// removed, or rejected to Draft, by an editor; a revision git has
// Published still cannot go back.
func TestLifecyclePolicy_withdrawPendingApproval(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	installUserRoles(t)
	alice := as(t, ns, "alice", "scion-editor")
	pending := func(name string, git porchv1alpha1.Lifecycle) *porchv1alpha1.PackageRevision {
		pr := revision(ns, name, porchv1alpha1.LifecyclePublished)
		pr.Annotations = map[string]string{porchv1alpha1.ApprovedByAnnotation: "bob"}
		g.Expect(k8sClient.Create(ctx, pr)).To(Succeed())
		pr.Status.Lifecycle = git
		g.Expect(k8sClient.Status().Update(ctx, pr)).To(Succeed())
		return pr
	}
	withdraw := func(pr *porchv1alpha1.PackageRevision, to porchv1alpha1.Lifecycle) error {
		cur := &porchv1alpha1.PackageRevision{}
		if err := alice.Get(ctx, client.ObjectKeyFromObject(pr), cur); err != nil {
			return err
		}
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Spec.Lifecycle = to
		delete(cur.Annotations, porchv1alpha1.ApprovedByAnnotation)
		return alice.Patch(ctx, cur, patch)
	}
	g.Eventually(func() error {
		return withdraw(pending("waiting", porchv1alpha1.LifecycleProposed), porchv1alpha1.LifecycleProposed)
	},
		30*time.Second, 200*time.Millisecond).Should(Succeed(), "withdrawn: Proposed again, no approval record")
	got := &porchv1alpha1.PackageRevision{}
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "r.app.waiting"}, got)).To(Succeed())
	g.Expect(got.Spec.Lifecycle).To(Equal(porchv1alpha1.LifecycleProposed))
	g.Expect(got.Annotations).NotTo(HaveKey(porchv1alpha1.ApprovedByAnnotation))
	g.Expect(withdraw(pending("rejected", porchv1alpha1.LifecycleProposed), porchv1alpha1.LifecycleDraft)).To(Succeed(), "rejected to Draft")

	done := pending("done", porchv1alpha1.LifecyclePublished)
	g.Expect(withdraw(done, porchv1alpha1.LifecycleProposed)).To(MatchError(ContainSubstring("a Published revision")))
}
