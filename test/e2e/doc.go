// Package e2e runs user scenarios end to end: the scion CLI against a real
// API server running every Scion controller, with real git repositories.
package e2e
