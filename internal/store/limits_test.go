package store

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/scion-dev/scion/internal/pkg"
	"github.com/scion-dev/scion/internal/testutil/gitserver"
)

// A remote that sends without end (a pack, or its refs) is cut off at the
// fetch limit, with a message naming the remote and the limit; nothing it
// sent is left on disk, and it is not asked again at once.
func TestRepository_fetchLimit(t *testing.T) {
	for _, refs := range []bool{false, true} {
		t.Run(map[bool]string{false: "endless pack", true: "endless refs"}[refs], func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			gitserver.SeedRevisions(t, gitserver.InitBare(t, root, "flood.git"), 1, 1, 1)
			srv := gitserver.NewServer(t, root)
			srv.Flood, srv.FloodRefs = 64<<20, refs
			cache := filepath.Join(t.TempDir(), "cache")
			gate := &Gate{}
			opts := Options{URL: srv.URLFor("flood.git"), CacheDir: cache, Gate: gate, Limits: Limits{FetchBytes: 1 << 20}}
			_, err := Open(context.Background(), opts)
			g.Expect(errors.Is(err, ErrLimit)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring(srv.URLFor("flood.git")))
			g.Expect(err.Error()).To(ContainSubstring("is over the git-max-fetch-size limit of 1Mi"))
			g.Expect(srv.Flooded.Load()).To(BeNumerically("<", srv.Flood/2), "the client hung up soon after the limit (what the server sent counts socket buffers too)")
			spooled, _ := filepath.Glob(filepath.Join(cache, "*", "fetch-*.pack"))
			more, _ := filepath.Glob(filepath.Join(cache, "fetch-*.pack"))
			g.Expect(append(spooled, more...)).To(BeEmpty(), "nothing of the flood is left on disk")

			// Asked again at once, the remote is left alone for a while.
			floods := srv.Floods.Load()
			_, err = Open(context.Background(), opts)
			g.Expect(err).To(HaveOccurred())
			_, paused := RetryAfter(err)
			g.Expect(paused).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring("git-max-fetch-size"), "the pause says why")
			g.Expect(srv.Floods.Load()).To(Equal(floods), "not asked during the pause")
		})
	}
}

// A package over a limit (one file, the number of files, their total) is
// refused before its files are read, naming the file or the package and
// the limit.
func TestRepository_packageLimits(t *testing.T) {
	ctx := context.Background()
	url, _ := newRemote(t)
	files := map[string][]byte{"Kptfile": []byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: big\n")}
	for _, n := range []string{"a.yaml", "b.yaml", "c.yaml"} {
		files[n] = []byte("data: " + strings.Repeat("x", 4000) + "\n")
	}
	files["huge.yaml"] = []byte("data: " + strings.Repeat("y", 20000) + "\n")
	writer := open(t, Options{URL: url, CreateBranch: true})
	d, err := writer.WriteDraft(ctx, DraftWrite{Package: "team/big", Workspace: "ws", Contents: pkg.New(files)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		limits Limits
		want   string
	}{
		{Limits{FileBytes: 16 << 10}, "file huge.yaml of package team/big (20007) is over the max-file-size limit of 16Ki"},
		{Limits{PackageFiles: 3}, "package team/big (more than 3 files) is over the max-package-files limit of 3"},
		{Limits{PackageBytes: 20 << 10}, "package team/big (more than 20Ki of files) is over the max-package-size limit of 20Ki"},
	} {
		g := NewWithT(t)
		r := open(t, Options{URL: url, Limits: tc.limits})
		rev, err := r.Get(ctx, "team/big", "ws", 0)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rev.Commit).To(Equal(d.Commit))
		_, err = r.Read(ctx, rev)
		g.Expect(errors.Is(err, ErrLimit)).To(BeTrue(), "%v", err)
		g.Expect(err.Error()).To(ContainSubstring(tc.want))
		var le *LimitError
		g.Expect(errors.As(err, &le)).To(BeTrue())
		g.Expect(le.StallReason()).To(Equal(LimitExceededReason))
	}
	g := NewWithT(t)
	r := open(t, Options{URL: url, Limits: Limits{FileBytes: 32}})
	rev, _ := r.Get(ctx, "team/big", "ws", 0)
	_, err = r.ReadFile(ctx, rev, "huge.yaml")
	g.Expect(err).To(MatchError(ContainSubstring("file huge.yaml of package team/big (20007) is over the max-file-size limit of 32")))
	// Within the limits (the defaults), it reads.
	p, err := open(t, Options{URL: url}).Read(ctx, rev)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Len()).To(Equal(5))
}
