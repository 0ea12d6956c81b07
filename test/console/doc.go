// Package console tests scion console in a real browser (Debian's headless
// Chromium, driven with chromedp) against the test control plane with the
// controllers running, acting as people with Kubernetes RBAC roles.
package console
