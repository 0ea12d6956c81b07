// Package variant holds what a PackageVariant does to a package, as pure
// functions the controller and `scion pv render` share: validating the
// spec, editing the package context, prepending the variant's functions to
// the Kptfile pipeline, and injecting configuration from cluster objects.
package variant
