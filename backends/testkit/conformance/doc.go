// Package conformance holds the cross-renderer conformance test: the docker and oci renderers must agree on every policy.
package conformance
