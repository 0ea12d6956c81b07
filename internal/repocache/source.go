package repocache

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/scion-dev/scion/internal/metrics"
	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/store"
)

// GitSource is a package in a git repository no Repository object names:
// the source of Porch's clone from a git URL.
type GitSource struct {
	// Namespace is where SecretName is read.
	Namespace string
	// URL of the repository; Ref a branch, tag, full ref name or full
	// commit hash ("main" when empty); Directory the package's folder
	// ("" for the repository's root).
	URL, Ref, Directory string
	// SecretName names a Secret of git credentials in Namespace (none
	// when empty).
	SecretName string
	// Field names the source in errors, such as
	// spec.tasks[0].clone.upstreamRef.git.
	Field string
}

// sourcePrefix starts the names of the folders sources are fetched into,
// inside Dir.
const sourcePrefix = ".source-"

// staleSource is the age after which a source folder is taken as left by
// a process that died while reading it.
const staleSource = time.Hour

// ReadSource fetches src into a mirror of its own, reads the package at
// its ref and directory, and removes the mirror: sources are read once
// (when a clone is written), so nothing of them is kept. The same rules
// as for Repositories hold: file:// only when allowed and never into the
// controller's own state, the same timeout and limits. It returns the
// package and the commit it was read at.
func (c *Cache) ReadSource(ctx context.Context, src GitSource) (_ *pkg.Package, commit string, err error) {
	if err := c.checkURL(src.URL, src.Field+".repo"); err != nil {
		return nil, "", err
	}
	creds, _, err := c.credentials(ctx, src.Namespace, src.SecretName, src.Field+".secretRef")
	if err != nil {
		return nil, "", err
	}
	c.removeStaleSources()
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, "", fmt.Errorf("creating the mirror folder: %w", err)
	}
	dir, err := os.MkdirTemp(c.Dir, sourcePrefix)
	if err != nil {
		return nil, "", fmt.Errorf("making a folder to fetch %s: %w", store.Redact(src.URL), err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	start := time.Now()
	repo, err := store.Open(ctx, store.Options{
		URL: src.URL, Credentials: creds, ReadOnly: true,
		CacheDir: dir, Timeout: c.Timeout, Limits: c.Limits, Objects: c.objects(), Transport: c.transports().git, CheckHost: c.Egress.CheckHost,
	})
	metrics.ObserveGit("open", start, &err)
	if err != nil {
		return nil, "", fmt.Errorf("%s.repo: %w", src.Field, err)
	}
	ref := src.Ref
	if ref == "" {
		ref = "main"
	}
	if commit, err = repo.ResolveRef(ctx, ref); err != nil {
		return nil, "", fmt.Errorf("%s.ref: %w", src.Field, err)
	}
	p, err := repo.Read(ctx, store.Revision{Package: src.Directory, Commit: commit})
	if err != nil {
		return nil, "", fmt.Errorf("%s.directory: %w", src.Field, err)
	}
	return p, commit, nil
}

// removeStaleSources removes the source folders a process that died
// while reading left behind.
func (c *Cache) removeStaleSources() {
	left, _ := filepath.Glob(filepath.Join(c.Dir, sourcePrefix+"*"))
	for _, d := range left {
		if fi, err := os.Stat(d); err == nil && time.Since(fi.ModTime()) > staleSource {
			_ = os.RemoveAll(d)
		}
	}
}
