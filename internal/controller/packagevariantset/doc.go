// Package packagevariantset reconciles PackageVariantSets: it expands each
// set (internal/variantset) into the desired PackageVariants and makes the
// existing ones match, creating, updating in place and deleting by
// identity.
package packagevariantset
