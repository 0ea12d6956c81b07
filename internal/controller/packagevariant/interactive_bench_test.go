package packagevariant_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/scion-dev/scion/api/config/v1alpha1"
	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
	"github.com/scion-dev/scion/internal/rpkg"
	"github.com/scion-dev/scion/internal/testutil/variantwatch"
)

// people is what people do while the fleet is bumped
// (SCION_BENCH_INTERACTIVE, `make bench-scale INTERACTIVE=1`): 50 edits
// of a variant of their own and 50 approvals of a proposed draft, each at
// a random moment of the bump.
type people struct {
	ns string
	rc *variantwatch.Counter
	// edited are the variants people edit; approved the drafts they
	// approve (of the other variants, proposed before the bump).
	edited, approved []string

	mu sync.Mutex
	// took are the waits of the edits (edit to Ready at the edit's
	// generation) and of the approvals (approve to Published in git).
	took [2][]time.Duration
	// during counts the actions started before the bump ended.
	during [2]int
	wg     sync.WaitGroup
}

// peopleCount is how many edits, and how many approvals, people make.
const peopleCount = 50

// newPeople makes 2×peopleCount variants of people's own (not the set's),
// spread over the fleet's repositories, waits for them to be Ready, and
// proposes the drafts of half of them.
func newPeople(b *testing.B, ns string, repos int, rc *variantwatch.Counter) *people {
	ctx := context.Background()
	p := &people{ns: ns, rc: rc}
	for i := range 2 * peopleCount {
		name := fmt.Sprintf("person-%02d", i)
		pv := &configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: configv1alpha1.PackageVariantSpec{
				Upstream:       &configv1alpha1.Upstream{Repo: "catalog", Package: "app", Revision: "1"},
				Downstream:     &configv1alpha1.Downstream{Repo: fmt.Sprintf("cluster-%04d", i*repos/(2*peopleCount)), Package: fmt.Sprintf("own-%02d", i)},
				PackageContext: &configv1alpha1.PackageContext{Data: map[string]string{"owner": name}},
				Injectors:      []configv1alpha1.InjectionSelector{{Name: "useast1-settings"}},
			}}
		if err := k8sClient.Create(ctx, pv); err != nil {
			b.Fatal(err)
		}
		if i < peopleCount {
			p.edited = append(p.edited, name)
		}
	}
	for i := range 2 * peopleCount {
		p.waitReady(b, fmt.Sprintf("person-%02d", i), 1)
	}
	list := &porchv1alpha1.PackageRevisionList{}
	if err := env.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	var drafts []string
	for _, pr := range list.Items {
		// The drafts of the second half: packages own-50 to own-99.
		if strings.HasPrefix(pr.Spec.PackageName, "own-") && pr.Spec.PackageName >= fmt.Sprintf("own-%02d", peopleCount) && pr.Spec.Lifecycle == porchv1alpha1.LifecycleDraft {
			drafts = append(drafts, pr.Name)
		}
	}
	if len(drafts) != peopleCount {
		b.Fatalf("%d drafts of people's variants, want %d", len(drafts), peopleCount)
	}
	rc2 := &rpkg.Client{Client: env.Client, Namespace: ns, Timeout: 5 * time.Minute}
	for _, r := range rpkg.Batch(ctx, drafts, rc2.Propose) {
		if r.Err != nil {
			b.Fatalf("%s: %v", r.Name, r.Err)
		}
	}
	p.approved = drafts
	return p
}

// waitReady waits until the variant is Ready at generation gen or later
// (read from the benchmark's own cache of variants: no API request).
func (p *people) waitReady(b *testing.B, name string, gen int64) {
	deadline := time.Now().Add(20 * time.Minute)
	for {
		if pv, err := p.rc.Get(context.Background(), p.ns, name); err == nil &&
			pv.Generation >= gen && configv1alpha1.ReadyAt(pv.Status.Conditions, pv.Generation, pv.Status.ObservedGeneration) {
			return
		}
		if time.Now().After(deadline) {
			b.Errorf("variant %s not Ready at generation %d after 20 minutes", name, gen)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// start schedules the actions at random moments within the first
// `within` of the bump, which ends when bumped is closed.
func (p *people) start(b *testing.B, within time.Duration, bumped <-chan struct{}) {
	ctx := context.Background()
	rc := &rpkg.Client{Client: env.Client, Namespace: p.ns, Timeout: 20 * time.Minute, Poll: 20 * time.Millisecond}
	record := func(kind int, start time.Time) {
		took := time.Since(start)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.took[kind] = append(p.took[kind], took)
	}
	counted := func(kind int) {
		select {
		case <-bumped:
		default:
			p.mu.Lock()
			p.during[kind]++
			p.mu.Unlock()
		}
	}
	// act does one action at a random moment; do returns when its wait
	// began.
	act := func(kind int, do func() (time.Time, error)) {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			time.Sleep(rand.N(within))
			counted(kind)
			start, err := do()
			if err != nil {
				b.Error(err)
				return
			}
			record(kind, start)
		}()
	}
	for i, name := range p.edited {
		act(0, func() (time.Time, error) {
			pv := &configv1alpha1.PackageVariant{}
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: p.ns, Name: name}, pv); err != nil {
				return time.Time{}, err
			}
			start := time.Now()
			patch := client.MergeFrom(pv.DeepCopy())
			pv.Spec.PackageContext.Data["edit"] = fmt.Sprint(i)
			if err := k8sClient.Patch(ctx, pv, patch); err != nil {
				return start, err
			}
			p.waitReady(b, name, pv.Generation)
			return start, nil
		})
	}
	for _, name := range p.approved {
		act(1, func() (time.Time, error) {
			start := time.Now()
			if _, err := rc.Approve(ctx, name); err != nil {
				return start, fmt.Errorf("approving %s: %w", name, err)
			}
			return start, nil
		})
	}
}

// report waits for every action and returns the table of their waits.
func (p *people) report() string {
	p.wg.Wait()
	var out strings.Builder
	out.WriteString("\npeople's work during the bump                        during    p50       p99       max\n")
	for kind, what := range []string{"edit a variant of their own → Ready", "approve a proposed draft → Published in git"} {
		took := slices.Clone(p.took[kind])
		slices.Sort(took)
		if len(took) == 0 {
			fmt.Fprintf(&out, "%-52s %3d/%d   (none finished)\n", what, p.during[kind], peopleCount)
			continue
		}
		fmt.Fprintf(&out, "%-52s %3d/%d %8s %8s %8s\n", what, p.during[kind], peopleCount, took[len(took)/2].Round(time.Millisecond),
			took[(len(took)*99-1)/100].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
	}
	return out.String()
}
