// Package memlimit sets the Go runtime's soft memory limit from the
// memory limit of the container the process runs in, so that the garbage
// collector works harder as the heap nears it instead of the process
// being killed for running out of memory. Go does not read the
// container's limit by itself: without this the heap may grow to twice
// what is live (GOGC=100) whatever the limit.
package memlimit

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
)

// Share is the part of the container's limit the Go runtime is given:
// the rest is for what it does not count (the memory of files it maps,
// its own bookkeeping above the limit when it must).
const Share = 0.9

// cgroupFiles are where the memory limit is read, under the file
// system's root: cgroup v2, then v1.
var cgroupFiles = []string{"sys/fs/cgroup/memory.max", "sys/fs/cgroup/memory/memory.limit_in_bytes"}

// noLimit is at or above what cgroup v1 reports for no limit (the
// largest page-aligned int64).
const noLimit = math.MaxInt64 / 2

// Container returns the memory limit of the container the process runs
// in, read under root ("/" in production), and false when there is none
// (no cgroup file, or no limit set).
func Container(root string) (int64, bool, error) {
	for _, name := range cgroupFiles {
		b, err := os.ReadFile(filepath.Join(root, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, false, fmt.Errorf("reading the container's memory limit: %w", err)
		}
		v := strings.TrimSpace(string(b))
		if v == "max" {
			return 0, false, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("reading the container's memory limit from /%s: %q is not a number", name, v)
		}
		if n <= 0 || n >= noLimit {
			return 0, false, nil
		}
		return n, true, nil
	}
	return 0, false, nil
}

// FromContainer sets the runtime's soft memory limit to Share of the
// container's (read under root), unless GOMEMLIMIT is set, which the
// runtime has already applied. It returns the limit set, 0 when none.
func FromContainer(root string) (int64, error) {
	mu.Lock()
	defer mu.Unlock()
	base = 0
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	n, ok, err := Container(root)
	if err != nil || !ok {
		return 0, err
	}
	base = int64(float64(n) * Share)
	return apply(), nil
}

var (
	mu sync.Mutex
	// base is the limit FromContainer set, 0 when it set none.
	base int64
	// offHeap is what the process holds outside the Go heap (OffHeap).
	offHeap int64
)

// OffHeap says the process holds n bytes outside the Go heap that count
// against the container's limit (the git object cache's segments): the
// runtime's soft limit, when FromContainer set one, becomes Share of the
// container's limit less n, and never less than half of that share. It
// returns the limit set, 0 when none.
func OffHeap(n int64) int64 {
	mu.Lock()
	defer mu.Unlock()
	offHeap = n
	return apply()
}

// apply sets the runtime's limit from base and offHeap (mu held).
func apply() int64 {
	if base == 0 {
		return 0
	}
	limit := max(base-offHeap, base/2)
	debug.SetMemoryLimit(limit)
	return limit
}
