package oci

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// A catalog read is shared for as long as its readers ask, and at least
// catalogCostShare times as long as it took: a large registry, whose
// catalog costs seconds to list, is not listed again every few seconds
// however often its Stores fetch. Packages made meanwhile are added.
func TestCatalogs_shareByCost(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := &Catalogs{now: func() time.Time { return now }}
	reads := 0
	slowRead := func() ([]string, error) {
		reads++
		now = now.Add(time.Second) // the registry takes a second
		return []string{"p/a"}, nil
	}
	fetch := func(maxAge time.Duration) []string {
		names, err := c.read(ctx, "k", now.Add(-maxAge), time.Time{}, slowRead)
		g.Expect(err).NotTo(HaveOccurred())
		return names
	}
	g.Expect(fetch(5 * time.Second)).To(ConsistOf("p/a"))
	g.Expect(reads).To(Equal(1))

	now = now.Add(10 * time.Second)
	g.Expect(fetch(5*time.Second)).To(ConsistOf("p/a"), "11 s old, older than the 5 s asked for, but younger than 20 times the second it took")
	g.Expect(reads).To(Equal(1))

	c.added("k", "p/b")
	c.added("k", "p/b")
	g.Expect(fetch(5*time.Second)).To(ConsistOf("p/a", "p/b"), "a package a Store made is added, once")

	now = now.Add(10 * time.Second)
	g.Expect(fetch(5 * time.Second)).To(ConsistOf("p/a"))
	g.Expect(reads).To(Equal(2), "21 s old: read again (and it lists what the registry has)")

	// A Repository made after a read started takes none that started
	// before it was made, however young.
	made := now.Add(time.Millisecond)
	now = now.Add(2 * time.Second)
	_, err := c.read(ctx, "k", now.Add(-5*time.Second), made, slowRead)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reads).To(Equal(3), "the read 1 s old started before the Repository was made")
	_, err = c.read(ctx, "k", now.Add(-5*time.Second), made, slowRead)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reads).To(Equal(3), "the new one is shared")

	// A quick read is shared only as long as asked.
	quick := func() ([]string, error) { reads++; return []string{"p/a"}, nil }
	_, err = c.read(ctx, "quick", now, time.Time{}, quick)
	g.Expect(err).NotTo(HaveOccurred())
	now = now.Add(6 * time.Second)
	_, err = c.read(ctx, "quick", now.Add(-5*time.Second), time.Time{}, quick)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reads).To(Equal(5), "a read that took no time is as old as asked for at most")

	// A read that failed is not shared.
	failing := func() ([]string, error) { reads++; return nil, errors.New("refused") }
	_, err = c.read(ctx, "failing", now, time.Time{}, failing)
	g.Expect(err).To(HaveOccurred())
	_, err = c.read(ctx, "failing", now.Add(-time.Hour), time.Time{}, failing)
	g.Expect(err).To(HaveOccurred())
	g.Expect(reads).To(Equal(7))
}
