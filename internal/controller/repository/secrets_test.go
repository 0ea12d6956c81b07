package repository_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/testutil/suite"
)

// TestSecretsNeverShown: a push the server refuses, a fetch of a missing
// repository and a refused password, with credentials in the URL and in a
// Secret, leave no credential in any status, event or log line, while
// the failures themselves are reported there.
func TestSecretsNeverShown(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	const inURL, wrong = "url-s3cret-7f3a", "wrong-s3cret-91c2"
	srv := privateServer(t, inURL)
	withCreds := func(name string) string {
		return strings.Replace(srv.URLFor(name), "http://", "http://scion:"+inURL+"@", 1)
	}

	// Pushes are refused by the server, after the Repository is Ready.
	pushes := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "pushes", Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: withCreds("private.git")}}}
	g.Expect(k8sClient.Create(ctx, pushes)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := readyCondition(g, client.ObjectKeyFromObject(pushes))
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
	}, timeout, interval).Should(Succeed())
	hook := filepath.Join(srv.Root, "private.git", "hooks", "pre-receive")
	g.Expect(os.WriteFile(hook, []byte("#!/bin/sh\necho refused by policy >&2\nexit 1\n"), 0o755)).To(Succeed())
	pr := &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Name: pkgservice.ObjectName("pushes", "app", "ws"), Namespace: ns},
		Spec: porchv1alpha1.PackageRevisionSpec{PackageName: "app", Repository: "pushes", WorkspaceName: "ws",
			Tasks: []porchv1alpha1.Task{{Type: porchv1alpha1.TaskTypeInit, Init: &porchv1alpha1.PackageInitTaskSpec{Description: "d"}}}},
	}
	g.Expect(k8sClient.Create(ctx, pr)).To(Succeed())

	// A fetch of a repository that is not there, and a refused password.
	missing := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: "missing", Namespace: ns},
		Spec: configv1alpha1.RepositorySpec{Git: &configv1alpha1.GitRepository{Repo: withCreds("absent.git")}}}
	g.Expect(k8sClient.Create(ctx, missing)).To(Succeed())
	g.Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "wrong", Namespace: ns},
		StringData: map[string]string{"username": "scion", "password": wrong}})).To(Succeed())
	refused := newRepository(ns, "refused", srv.URLFor("private.git"), "wrong")
	g.Expect(k8sClient.Create(ctx, refused)).To(Succeed())

	g.Eventually(func(g Gomega) {
		got := &porchv1alpha1.PackageRevision{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pr), got)).To(Succeed())
		g.Expect(got.Status.Conditions).To(ContainElement(And(HaveField("Type", "Ready"), HaveField("Message", ContainSubstring("pre-receive hook declined")))), "the refused push is reported")
		c := readyCondition(g, client.ObjectKeyFromObject(missing))
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(porchv1alpha1.RepositoryNotFoundReason))
		c = readyCondition(g, client.ObjectKeyFromObject(refused))
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(configv1alpha1.AuthenticationFailedReason))
		g.Expect(suite.Logs.String()).To(ContainSubstring("pre-receive hook declined"), "the refused push is logged")
	}, timeout, interval).Should(Succeed())

	// Everything a user or an operator can read.
	var texts []string
	repos := &configv1alpha1.RepositoryList{}
	g.Expect(k8sClient.List(ctx, repos, client.InNamespace(ns))).To(Succeed())
	for _, r := range repos.Items {
		for _, c := range r.Status.Conditions {
			texts = append(texts, c.Message)
		}
	}
	prs := &porchv1alpha1.PackageRevisionList{}
	g.Expect(k8sClient.List(ctx, prs, client.InNamespace(ns))).To(Succeed())
	for _, p := range prs.Items {
		for _, c := range p.Status.Conditions {
			texts = append(texts, c.Message)
		}
	}
	events := &eventsv1.EventList{}
	g.Expect(k8sClient.List(ctx, events, client.InNamespace(ns))).To(Succeed())
	for _, e := range events.Items {
		texts = append(texts, e.Note)
	}
	texts = append(texts, suite.Logs.String())
	for _, text := range texts {
		g.Expect(text).NotTo(ContainSubstring(inURL))
		g.Expect(text).NotTo(ContainSubstring(wrong))
	}
}
