// Package conformance holds the cross-renderer conformance tests: the
// docker and oci renderers must agree on every policy, every backend's
// rendering carries the policy's rlimits, and every backend's rendered
// summary (backends.Rendered) honours each field of the policy or the
// backend declares the capability it lacks, which Enforce reports.
package conformance
