// Package packagerollout reconciles PackageRollouts: it freezes the
// Proposed revisions a rollout selects into waves (internal/rollout), and
// publishes them wave by wave through their PackageRevision objects, as an
// approver would, gated by health, soak time and approval; when the
// rollout fails or is aborted it rolls back what it published through the
// package service.
package packagerollout
