package rpkg

import (
	"context"
	"fmt"
	"strings"
	"sync"

	porchv1alpha1 "github.com/scion-dev/scion/api/porch/v1alpha1"
)

// BatchParallelism is how many revisions a batch verb works on at once.
const BatchParallelism = 32

// Result is what a verb did to one revision.
type Result struct {
	Name     string
	Revision *porchv1alpha1.PackageRevision
	Err      error
}

// Batch runs fn on every name at once (BatchParallelism at a time), so
// that revisions wait for the controller together rather than in turn;
// the results are in the order of names.
func Batch(ctx context.Context, names []string, fn func(context.Context, string) (*porchv1alpha1.PackageRevision, error)) []Result {
	out := make([]Result, len(names))
	sem := make(chan struct{}, BatchParallelism)
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				out[i] = Result{Name: name, Err: ctx.Err()}
				return
			}
			defer func() { <-sem }()
			pr, err := fn(ctx, name)
			out[i] = Result{Name: name, Revision: pr, Err: err}
		}()
	}
	wg.Wait()
	return out
}

// resourcePrefixes are how kubectl -o name (and people) write a
// PackageRevision's name.
var resourcePrefixes = []string{
	"packagerevision.porch.kpt.dev/", "packagerevisions.porch.kpt.dev/", "packagerevision/", "packagerevisions/", "pr/",
}

// ParseName takes a revision's name as given on a command line: NAME, or
// kubectl's resource/NAME (packagerevision.porch.kpt.dev/NAME, what
// kubectl get -o name prints).
func ParseName(arg string) (string, error) {
	for _, p := range resourcePrefixes {
		if name, ok := strings.CutPrefix(arg, p); ok && name != "" && !strings.Contains(name, "/") {
			return name, nil
		}
	}
	if strings.Contains(arg, "/") {
		return "", fmt.Errorf("%q is not a PackageRevision: give its name, or packagerevision.porch.kpt.dev/NAME as kubectl get -o name prints it", arg)
	}
	return arg, nil
}

// Interrupted says, after a batch verb was interrupted, which of its
// revisions moved from lifecycle from (the move is recorded: git may
// still be catching up, as the lifecycle shown says) and which did not,
// as the server has them now: a request cut off may have moved its
// revision or not. Each one is read again with ctx, which must outlive
// the interrupted one; one that cannot be read is in unknown, with why.
func (c *Client) Interrupted(ctx context.Context, names []string, from porchv1alpha1.Lifecycle) (moved, notMoved []string, unknown map[string]error) {
	for _, name := range names {
		pr, err := c.Get(ctx, name)
		switch {
		case err != nil:
			if unknown == nil {
				unknown = map[string]error{}
			}
			unknown[name] = err
		case pr.Spec.Lifecycle == from || pr.Spec.Lifecycle == "" && from == porchv1alpha1.LifecycleDraft:
			notMoved = append(notMoved, name)
		default:
			moved = append(moved, fmt.Sprintf("%s (%s)", name, pr.ShownLifecycle()))
		}
	}
	return moved, notMoved, unknown
}
