// Package packagelock keeps the PackageLock of every deployment
// Repository: each package in it (from git, drafts included), its
// version, the kinds it provides and its dependants, the packages
// PackageVariants are installing, and the kinds two packages provide.
package packagelock
