// Package lru is a cache bounded in entries and in size that forgets what
// was used least recently: the one way Scion keeps read things (parsed
// upstream packages, a registry's package layers) without holding every
// one it ever read.
package lru

import (
	"container/list"
	"sync"
)

// Cache maps keys to values, at most maxEntries of them and, when
// maxSize is above 0, values whose sizes (as the caller gives them) add
// up to at most maxSize; adding past either bound drops the least
// recently used. It is safe for concurrent use.
type Cache[K comparable, V any] struct {
	maxEntries int
	maxSize    int64

	mu      sync.Mutex
	order   *list.List // of *entry[K, V], most recently used first
	entries map[K]*list.Element
	size    int64
}

type entry[K comparable, V any] struct {
	key   K
	value V
	size  int64
}

// New returns a cache of at most maxEntries values and, when maxSize is
// above 0, at most maxSize in all.
func New[K comparable, V any](maxEntries int, maxSize int64) *Cache[K, V] {
	return &Cache[K, V]{maxEntries: maxEntries, maxSize: maxSize, order: list.New(), entries: map[K]*list.Element{}}
}

// Get returns the value of k, which becomes the most recently used.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*entry[K, V]).value, true
}

// Add keeps v under k (replacing what k had) as the most recently used,
// then drops the least recently used until the cache is within its
// bounds. A value larger than the whole size bound is not kept.
func (c *Cache[K, V]) Add(k K, v V, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[k]; ok {
		c.removeLocked(e)
	}
	if c.maxSize > 0 && size > c.maxSize {
		return
	}
	c.entries[k] = c.order.PushFront(&entry[K, V]{key: k, value: v, size: size})
	c.size += size
	for c.order.Len() > c.maxEntries || (c.maxSize > 0 && c.size > c.maxSize) {
		c.removeLocked(c.order.Back())
	}
}

func (c *Cache[K, V]) removeLocked(e *list.Element) {
	en := c.order.Remove(e).(*entry[K, V])
	delete(c.entries, en.key)
	c.size -= en.size
}

// Len is the number of values kept; Size the sum of their sizes.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// Size is the sum of the sizes of the values kept.
func (c *Cache[K, V]) Size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

// Clear drops every value and says whether there was any.
func (c *Cache[K, V]) Clear() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.order.Len()
	c.order.Init()
	clear(c.entries)
	c.size = 0
	return n > 0
}
