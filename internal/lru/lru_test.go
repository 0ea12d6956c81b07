package lru_test

import (
	"testing"

	"github.com/scion-dev/scion/internal/lru"
)

func TestCache_dropsLeastRecentlyUsed(t *testing.T) {
	c := lru.New[string, int](2, 0)
	c.Add("a", 1, 0)
	c.Add("b", 2, 0)
	if _, ok := c.Get("a"); !ok { // a is now the most recently used
		t.Fatal("a was dropped while the cache held two of two")
	}
	c.Add("c", 3, 0)
	if _, ok := c.Get("b"); ok {
		t.Error("b, the least recently used, is still kept past the bound of 2")
	}
	for k, want := range map[string]int{"a": 1, "c": 3} {
		if v, ok := c.Get(k); !ok || v != want {
			t.Errorf("Get(%q) = %d, %v; want %d, true", k, v, ok, want)
		}
	}
	if c.Len() != 2 {
		t.Errorf("Len() = %d, want 2", c.Len())
	}
}

func TestCache_sizeBound(t *testing.T) {
	c := lru.New[string, string](100, 10)
	c.Add("a", "aaaa", 4)
	c.Add("b", "bbbb", 4)
	c.Add("c", "cccc", 4) // 12 > 10: a goes
	if _, ok := c.Get("a"); ok {
		t.Error("a is kept although the sizes add up to 12 over a bound of 10")
	}
	if c.Size() != 8 {
		t.Errorf("Size() = %d, want 8", c.Size())
	}
	c.Add("big", "x", 11)
	if _, ok := c.Get("big"); ok {
		t.Error("a value larger than the whole bound is kept")
	}
	if c.Len() != 2 || c.Size() != 8 {
		t.Errorf("after a value too large: Len() = %d, Size() = %d; want 2 and 8 (nothing dropped for it)", c.Len(), c.Size())
	}
	c.Add("b", "bb", 2) // replacing counts the new size only
	if c.Size() != 6 {
		t.Errorf("after replacing b: Size() = %d, want 6", c.Size())
	}
	if !c.Clear() || c.Len() != 0 || c.Size() != 0 {
		t.Errorf("Clear: Len() = %d, Size() = %d; want 0 and 0", c.Len(), c.Size())
	}
	if c.Clear() {
		t.Error("Clear of an empty cache says it dropped something")
	}
}
