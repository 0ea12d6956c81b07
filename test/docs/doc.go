// Package docs holds tests that keep the user documentation true to the
// code: every status reason the controllers set has a troubleshooting
// entry, and the getting-started guide runs as written.
package docs
