// Package integration holds the backend-neutral integration tests: the
// same behaviour checks (writable paths, environment, network and
// privileges, exit codes, timeouts, staged writable paths) run against
// every Linux backend that can run on this machine — docker, oci and
// local — each built as the CLI's registry builds it, with a policy built
// for that backend's capabilities. A backend that cannot run here (no
// daemon, not root, a missing kernel layer) is skipped with the reason.
//
// The package has tests only.
package integration
