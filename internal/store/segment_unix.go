//go:build unix

package store

import "syscall"

// newSegmentBuf returns n bytes for a segment of an ObjectCache: an
// anonymous private mapping, outside the Go heap (mapped true), or of the
// heap when the system refuses the mapping.
func newSegmentBuf(n int) (b []byte, mapped bool) {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]byte, n), false
	}
	return b[:n:n], true
}

// freeSegmentBuf returns a mapped segment's memory to the system.
func freeSegmentBuf(b []byte, mapped bool) {
	if mapped && cap(b) > 0 {
		_ = syscall.Munmap(b[:cap(b)])
	}
}
