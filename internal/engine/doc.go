// Package engine holds the operations on packages: clone, package context,
// 3-way update and render. It works on in-memory packages only (no
// Kubernetes, no git), has no global state, and is safe to call from many
// goroutines at once.
package engine
