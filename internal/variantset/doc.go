// Package variantset holds what a PackageVariantSet does, as pure functions
// the controller and `scion pvs expand` share: validating the spec,
// unrolling its targets into downstream repository and package pairs,
// evaluating the template's CEL expressions, and naming the generated
// PackageVariants.
package variantset
