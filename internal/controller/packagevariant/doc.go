// Package packagevariant reconciles PackageVariants: it keeps exactly one
// downstream draft per variant in the downstream repository, produced from
// the upstream revision by the variant package (clone or 3-way update,
// context, pipeline, injection, render) in one commit, and applies the
// deletion policy when the variant goes.
package packagevariant
