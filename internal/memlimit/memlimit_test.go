package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	. "github.com/onsi/gomega"
)

func write(t *testing.T, root, name, content string) {
	t.Helper()
	p := filepath.Join(root, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The limit is read from cgroup v2, else v1; "max", v1's huge value for
// none and no file at all mean no limit; anything else is an error naming
// the file.
func TestContainer(t *testing.T) {
	g := NewWithT(t)
	for _, c := range []struct {
		name, file, content string
		want                int64
		ok                  bool
		err                 string
	}{
		{"v2", "sys/fs/cgroup/memory.max", "2147483648\n", 2 << 30, true, ""},
		{"v2 unlimited", "sys/fs/cgroup/memory.max", "max\n", 0, false, ""},
		{"v1", "sys/fs/cgroup/memory/memory.limit_in_bytes", "536870912\n", 512 << 20, true, ""},
		{"v1 unlimited", "sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n", 0, false, ""},
		{"none", "", "", 0, false, ""},
		{"garbage", "sys/fs/cgroup/memory.max", "lots", 0, false, `/sys/fs/cgroup/memory.max: "lots" is not a number`},
	} {
		root := t.TempDir()
		if c.file != "" {
			write(t, root, c.file, c.content)
		}
		n, ok, err := Container(root)
		if c.err != "" {
			g.Expect(err).To(MatchError(ContainSubstring(c.err)), c.name)
			continue
		}
		g.Expect(err).NotTo(HaveOccurred(), c.name)
		g.Expect(n).To(Equal(c.want), c.name)
		g.Expect(ok).To(Equal(c.ok), c.name)
	}
}

// The runtime gets Share of the container's limit, and GOMEMLIMIT, when
// set, wins.
func TestFromContainer(t *testing.T) {
	g := NewWithT(t)
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	root := t.TempDir()
	write(t, root, "sys/fs/cgroup/memory.max", "1073741824")

	t.Setenv("GOMEMLIMIT", "")
	limit, err := FromContainer(root)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(limit).To(Equal(int64(966367641)), "0.9 of 1 GiB")
	g.Expect(debug.SetMemoryLimit(-1)).To(Equal(limit))

	// Memory outside the heap (the git object cache) is left room for,
	// never more than half.
	g.Expect(OffHeap(100 << 20)).To(Equal(int64(966367641 - 100<<20)))
	g.Expect(debug.SetMemoryLimit(-1)).To(Equal(int64(966367641 - 100<<20)))
	g.Expect(OffHeap(900 << 20)).To(Equal(int64(966367641 / 2)))
	defer OffHeap(0)

	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "300MiB")
	limit, err = FromContainer(root)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(limit).To(BeZero())
	g.Expect(debug.SetMemoryLimit(-1)).To(Equal(int64(math.MaxInt64)), "GOMEMLIMIT is the runtime's, left alone")
	g.Expect(OffHeap(100 << 20)).To(BeZero())
	g.Expect(debug.SetMemoryLimit(-1)).To(Equal(int64(math.MaxInt64)), "and stays so")
}
