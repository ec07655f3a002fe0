// Package egresstest is the only way to give a run's network proxy test
// upstreams (egress.Config.TestUpstreams: loopback canaries), a resolver,
// a dialer and a byte bound: a value in a context that Go code puts there, for tests
// and the selftest's own canaries. It is internal, so only this module can
// import it, and nothing reads it from a config file, a flag or the
// environment: a user's allow-list can never reach this machine's own
// addresses through it.
package egresstest

import (
	"context"
	"crypto/x509"
	"net"
	"net/netip"
)

// Hook is what a test gives the proxy; a zero field leaves the proxy's own.
type Hook struct {
	Upstreams []netip.Prefix
	Resolver  interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	}
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// MaxBytes bounds the run's bytes (egress.Limits.MaxBytes): the
	// selftest's small bound, to see a download cut (NET-28).
	MaxBytes int64
	// Roots verify the upstreams of brokered hosts (egress.Config.BrokerRoots):
	// a test's own root, never skipped verification.
	Roots *x509.CertPool
}

type key struct{}

// With returns ctx carrying h for the proxy of every run started with it.
func With(ctx context.Context, h Hook) context.Context {
	return context.WithValue(ctx, key{}, h)
}

// From is the hook ctx carries (the zero Hook unless With).
func From(ctx context.Context) Hook {
	h, _ := ctx.Value(key{}).(Hook)
	return h
}
