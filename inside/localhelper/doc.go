// Package localhelper is the local backend's in-sandbox side: the helper that
// the host re-runs in new namespaces, which builds the sandbox from its plan
// (inside/confine), restricts itself and then holds the sandbox. It
// is apart from package local so the small in-sandbox binary
// (cmd/triage-sandbox-inside) links the helper without the host side's
// policy, config and gate.
package localhelper
