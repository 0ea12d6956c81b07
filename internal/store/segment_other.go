//go:build !unix

package store

// newSegmentBuf returns n bytes of the Go heap for a segment of an
// ObjectCache (systems without mmap).
func newSegmentBuf(n int) (b []byte, mapped bool) { return make([]byte, n), false }

// freeSegmentBuf leaves a segment's memory to the collector.
func freeSegmentBuf([]byte, bool) {}
