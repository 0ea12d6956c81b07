package rpkg

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/scion-dev/scion/api/porch/v1alpha1/content"
	"github.com/scion-dev/scion/internal/pkg"
)

// PullContent writes the files of a revision into dir (which is created,
// and must not hold another package), read through Porch's API
// (PackageRevisionResources: get on packagerevisionresources is all it
// needs), and records the commit they come from in PulledFile. It
// returns that commit.
func (c *Client) PullContent(ctx context.Context, name, dir string) (string, error) {
	p, commit, err := c.Content(ctx, name)
	if err != nil {
		return "", err
	}
	if err := p.WriteDir(dir); err != nil {
		return "", err
	}
	return commit, writePulled(dir, name, commit)
}

// Content reads the files of a revision through Porch's API
// (PackageRevisionResources), and the commit they come from.
func (c *Client) Content(ctx context.Context, name string) (*pkg.Package, string, error) {
	prr := &content.PackageRevisionResources{}
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, prr); err != nil {
		return nil, "", err
	}
	files := make(map[string][]byte, len(prr.Spec.Resources))
	for path, data := range prr.Spec.Resources {
		files[path] = []byte(data)
	}
	return pkg.New(files), prr.ResourceVersion, nil
}

// PushContent writes dir as one new commit of a draft through Porch's API
// (update on packagerevisionresources), against the commit PullContent
// recorded in dir: if the draft changed since, nothing is written and the
// error says what changed. The API server renders the package; the
// render's result is returned. It returns the new commit.
func (c *Client) PushContent(ctx context.Context, name, dir, message string) (string, content.RenderStatus, error) {
	from, err := readPulled(dir, name)
	if err != nil {
		return "", content.RenderStatus{}, err
	}
	p, err := pkg.ReadDir(dir)
	if err != nil {
		return "", content.RenderStatus{}, err
	}
	p.DeleteFile(PulledFile)
	prr := &content.PackageRevisionResources{}
	prr.Name, prr.Namespace, prr.ResourceVersion = name, c.Namespace, from
	if message != "" {
		prr.Annotations = map[string]string{content.CommitMessageAnnotation: message}
	}
	prr.Spec.Resources = map[string]string{}
	for path, data := range p.Files() {
		prr.Spec.Resources[path] = string(data)
	}
	if err := c.Client.Update(ctx, prr); err != nil {
		if apierrors.IsConflict(err) {
			// The server says what changed: "... since it was read (read
			// at commit X, now Y: the commits); nothing was written ...".
			what := err.Error()
			if _, after, ok := strings.Cut(what, "since it was read "); ok {
				what, _, _ = strings.Cut(after, "; nothing was written")
			}
			return "", content.RenderStatus{}, fmt.Errorf("%s changed since %s was pulled %s; nothing was pushed. Pull it into another folder, merge your edits into it, and push from there: %w",
				name, dir, what, ErrChangedSincePull)
		}
		return "", content.RenderStatus{}, refusal(name, err)
	}
	return prr.ResourceVersion, prr.Status.RenderStatus, writePulled(dir, name, prr.ResourceVersion)
}

// writePulled records in dir which revision and commit it holds.
func writePulled(dir, name, commit string) error {
	record, err := json.Marshal(pulled{Name: name, Commit: commit})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, PulledFile), append(record, '\n'), 0o644)
}

// readPulled reads the commit a folder was pulled at, checking it was
// pulled from name.
func readPulled(dir, name string) (string, error) {
	var from pulled
	data, err := os.ReadFile(filepath.Join(dir, PulledFile))
	if err != nil {
		return "", fmt.Errorf("%s has no %s: push a folder made by scion rpkg pull %s (it records the commit your edits start from): %w", dir, PulledFile, name, err)
	}
	if err := json.Unmarshal(data, &from); err != nil || from.Commit == "" {
		return "", fmt.Errorf("%s: not a record of scion rpkg pull; pull again", filepath.Join(dir, PulledFile))
	}
	if from.Name != name {
		return "", fmt.Errorf("%s was pulled from %s, not %s", dir, from.Name, name)
	}
	return from.Commit, nil
}
