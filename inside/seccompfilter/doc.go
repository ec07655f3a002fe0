// Package seccompfilter is the seccomp filter the sandbox's own helpers
// load where the runtime loads none: the local backend's helper (its whole
// syscall policy) and the supervisor under a runtime whose exec applies no
// filter (gVisor's). Its rules deny what the container profile
// (seccompprofile) refuses too, from the same list of refusals, as a BPF
// program assembled here (no libseccomp, no cgo).
package seccompfilter
