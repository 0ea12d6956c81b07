// Package demo loads the fleet in a box (examples/) into a cluster and
// walks through Scion's main job on it: what `make demo` runs (through
// `scion dev demo`) and what the end-to-end test exercises.
package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	configv1alpha2 "github.com/scion-dev/scion/api/config/v1alpha2"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/pkgservice"
	"github.com/scion-dev/scion/internal/store"
	"github.com/scion-dev/scion/internal/variant"
)

// Fleet is examples/fleet/fleet.yaml.
type Fleet struct {
	Namespace string    `json:"namespace"`
	Catalog   string    `json:"catalog"`
	Clusters  []Cluster `json:"clusters"`

	// Sets and Variants name the objects the demo applied (Load): it
	// waits for them and what they make, not for other objects of the
	// namespace.
	Sets, Variants map[string]bool `json:"-"`
	// Start is the spec of each PackageVariantSet as the examples give
	// it: where the story starts (startOver).
	Start map[string]configv1alpha2.PackageVariantSetSpec `json:"-"`
}

// Cluster is one deployment repository of the fleet.
type Cluster struct {
	Name   string `json:"name"`
	Region string `json:"region"`
	Env    string `json:"env"`
}

// Options configure the demo.
type Options struct {
	// Examples is the examples/ folder.
	Examples string
	// GitDir holds the fleet's bare repositories.
	GitDir string
	Client client.Client
	Out    io.Writer
	// Timeout bounds each wait (5 minutes when 0).
	Timeout time.Duration
	// Command is how the reader runs scion, in the commands the walk-through
	// prints ("scion" when empty; bin/scion when it is not on PATH).
	Command string
	// Registry is the address (127.0.0.1:PORT) of an OCI registry for the
	// walk-through's OCI part; skipped when empty.
	Registry string
	// Target, when set, is a real cluster with Flux where sickCluster's
	// regional-app runs: the bad release crash-loops there and Flux's
	// word judges it. Without it, a health reporter the demo runs
	// simulates a deployer.
	Target *TargetCluster
}

// scion is the command the walk-through prints for scion.
func (o *Options) scion() string {
	if o.Command == "" {
		return "scion"
	}
	return o.Command
}

func (o *Options) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return 5 * time.Minute
}

func (o *Options) say(format string, args ...any) {
	fmt.Fprintf(o.Out, format+"\n", args...)
}

// ReadFleet reads examples/fleet/fleet.yaml.
func (o *Options) ReadFleet() (*Fleet, error) {
	data, err := os.ReadFile(filepath.Join(o.Examples, "fleet", "fleet.yaml"))
	if err != nil {
		return nil, err
	}
	f := &Fleet{}
	if err := yaml.UnmarshalStrict(data, f); err != nil {
		return nil, fmt.Errorf("fleet.yaml: %w", err)
	}
	return f, nil
}

func (o *Options) repoURL(name string) string {
	return "file://" + filepath.Join(o.GitDir, name+".git")
}

// openStore opens a fleet repository with a private cache (the demo
// writes as a person would, not through the controller's mirrors).
func (o *Options) openStore(ctx context.Context, name string) (store.Store, error) {
	return store.Open(ctx, store.Options{URL: o.repoURL(name), CreateBranch: true, CacheDir: filepath.Join(o.GitDir, ".cache", name), Author: "demo", Email: "demo@example.com"})
}

// Load creates what is missing of the fleet: the bare repositories, the
// blueprints published as v1, the Repository objects, the in-cluster
// objects and the example variants. Running it again changes nothing.
func (o *Options) Load(ctx context.Context) (*Fleet, error) {
	f, err := o.ReadFleet()
	if err != nil {
		return nil, err
	}
	o.say("==> git repositories in %s: %s and %d clusters", o.GitDir, f.Catalog, len(f.Clusters))
	names := []string{f.Catalog}
	for _, c := range f.Clusters {
		names = append(names, c.Name)
	}
	for _, n := range names {
		path := filepath.Join(o.GitDir, n+".git")
		if _, err := os.Stat(path); err == nil {
			continue
		}
		if _, err := git.PlainInit(path, true); err != nil {
			return nil, fmt.Errorf("creating %s: %w", path, err)
		}
	}
	if err := o.publishBlueprints(ctx, f); err != nil {
		return nil, err
	}
	o.say("==> Repository objects in namespace %s", f.Namespace)
	for _, n := range names {
		repo := &configv1alpha1.Repository{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: f.Namespace}}
		spec := configv1alpha1.RepositorySpec{Type: "git", Git: &configv1alpha1.GitRepository{Repo: o.repoURL(n), CreateBranch: true}}
		labels := map[string]string{}
		for _, c := range f.Clusters {
			if c.Name == n {
				spec.Deployment = true
				labels = map[string]string{"region": c.Region, "env": c.Env}
			}
		}
		if n == sickCluster && o.Target != nil {
			if err := o.storeReaderKubeconfig(ctx, f.Namespace, n); err != nil {
				return nil, err
			}
			spec.Cluster = o.clusterSpec(n)
		}
		if err := createOrUpdate(ctx, o.Client, repo, func() {
			// Where a Repository's cluster is, the demo keeps (a run
			// without the target cluster after one with it, or a
			// person's).
			if spec.Cluster == nil {
				spec.Cluster = repo.Spec.Cluster
			}
			repo.Spec = spec
			if repo.Labels == nil {
				repo.Labels = map[string]string{}
			}
			for k, v := range labels {
				repo.Labels[k] = v
			}
		}); err != nil {
			return nil, fmt.Errorf("Repository %s: %w", n, err)
		}
	}
	// The variant the demo makes itself (its deliberate conflict) is its
	// own too, from an earlier run.
	f.Sets, f.Variants, f.Start = map[string]bool{}, map[string]bool{conflictVariant: true}, map[string]configv1alpha2.PackageVariantSetSpec{}
	for _, file := range []string{"objects.yaml", "variants.yaml"} {
		o.say("==> applying examples/fleet/%s", file)
		if err := o.applyFile(ctx, filepath.Join(o.Examples, "fleet", file), f); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// publishBlueprints publishes each examples/blueprints package as v1 of
// the catalog unless it is there.
func (o *Options) publishBlueprints(ctx context.Context, f *Fleet) error {
	st, err := o.openStore(ctx, f.Catalog)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(o.Examples, "blueprints"))
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		revs, err := st.ListPackage(ctx, e.Name())
		if err != nil {
			return err
		}
		if latestRevision(revs) > 0 {
			continue
		}
		p, err := pkg.ReadDir(filepath.Join(o.Examples, "blueprints", e.Name()))
		if err != nil {
			return err
		}
		if _, err := publish(ctx, st, e.Name(), "v1", p); err != nil {
			return fmt.Errorf("publishing %s: %w", e.Name(), err)
		}
		o.say("==> published blueprint %s v1", e.Name())
	}
	return nil
}

// publish writes p as a draft of workspace ws, proposes and publishes it,
// as a blueprint author does.
func publish(ctx context.Context, st store.Store, name, ws string, p *pkg.Package) (store.Revision, error) {
	return (&pkgservice.Service{}).PublishDirect(ctx, st, name, ws, p, "Blueprint "+name+" "+ws, "platform-team")
}

func latestRevision(revs []store.Revision) int {
	n := 0
	for _, r := range revs {
		n = max(n, r.Revision)
	}
	return n
}

// applyFile creates the objects of a YAML file that do not exist; those
// that do are left as they are (the walk-through moves an upstream, and a
// second run continues from there).
func (o *Options) applyFile(ctx context.Context, path string, f *Fleet) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	objs, err := variant.ReadObjects(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, want := range objs {
		if err := o.Client.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%s %s: %w", want.GetKind(), want.GetName(), err)
		}
		switch want.GetObjectKind().GroupVersionKind().Kind {
		case "PackageVariantSet":
			f.Sets[want.GetName()] = true
			set := &configv1alpha2.PackageVariantSet{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(want.Object, set); err != nil {
				return fmt.Errorf("%s: PackageVariantSet %s: %w", path, want.GetName(), err)
			}
			f.Start[set.Name] = set.Spec
		case "PackageVariant":
			f.Variants[want.GetName()] = true
		}
	}
	return nil
}

func createOrUpdate(ctx context.Context, c client.Client, obj client.Object, mutate func()) error {
	err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		mutate()
		return c.Create(ctx, obj)
	}
	if err != nil {
		return err
	}
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	mutate()
	return c.Patch(ctx, obj, patch)
}

// describeMissing says which objects are not ready.
func describeMissing(names []string) string {
	if len(names) > 5 {
		return strings.Join(names[:5], ", ") + fmt.Sprintf(" and %d more", len(names)-5)
	}
	return strings.Join(names, ", ")
}
