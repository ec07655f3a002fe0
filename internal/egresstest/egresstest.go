// Package egresstest is the only way to let a run's network proxy dial
// loopback upstreams (egress.Config.TestUpstreams): a value in a context
// that Go code puts there, for tests and the selftest's own canaries. It
// is internal, so only this module can import it, and nothing reads it
// from a config file, a flag or the environment: a user's allow-list can
// never reach this machine's own addresses through it.
package egresstest

import (
	"context"
	"net/netip"
	"slices"
)

type key struct{}

// WithUpstreams returns ctx carrying prefixes as the proxy's test upstreams.
func WithUpstreams(ctx context.Context, prefixes ...netip.Prefix) context.Context {
	return context.WithValue(ctx, key{}, slices.Clone(prefixes))
}

// Upstreams are the test upstreams ctx carries (none unless WithUpstreams).
func Upstreams(ctx context.Context) []netip.Prefix {
	p, _ := ctx.Value(key{}).([]netip.Prefix)
	return slices.Clone(p)
}
