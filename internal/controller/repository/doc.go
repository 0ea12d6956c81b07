// Package repository reconciles Repository objects: it opens the git
// repository (credentials from the Repository's Secret), projects its
// package revisions as PackageRevision objects through the package
// service, keeps them in sync periodically and on spec changes, and reports
// Ready with a message a user can act on.
package repository
