package selftest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/egress/allow"
	"github.com/triage-sandbox/triage-sandbox/inside/probe"
	"github.com/triage-sandbox/triage-sandbox/internal/egresstest"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

// netPolicy is the role's policy with its network replaced by the
// selftest's allow-list (netRules) and the proxy settings that go with it.
func netPolicy(p *policy.Policy) *policy.Policy {
	cp := *p
	cp.Network = policy.Network{Mode: policy.NetworkProxy, Rules: netRules(), Key: p.Network.Key}
	proxyEnv := policy.ProxyEnv()
	cp.Env = slices.DeleteFunc(slices.Clone(p.Env), func(v policy.EnvVar) bool {
		return slices.ContainsFunc(proxyEnv, func(w policy.EnvVar) bool { return w.Name == v.Name })
	})
	cp.Env = append(cp.Env, proxyEnv...)
	return &cp
}

// phaseSteps are the steps of the phase's checks, as e places them;
// NET-28 last: the byte bound is the run's, and once it is passed every
// later request of the run is refused.
func phaseSteps(e *Env, checks []Check, ph Phase, control bool) []probe.Step {
	var steps, last []probe.Step
	for _, ch := range checks {
		if ch.Phase == ph && ch.Steps != nil && (!control || ch.HasControl()) {
			if ch.ID == "NET-28" {
				last = ch.Steps(e)
				continue
			}
			steps = append(steps, ch.Steps(e)...)
		}
	}
	return append(steps, last...)
}

// runNetworkPhase runs the allow-list checks in a sandbox of their own
// whose proxy has the phase's rig as its resolver, dialer and only
// upstreams. Warm (--warm session or pool), the sandbox is a keeper's, as
// a session's or pool's is: the keeper runs in this process (KeepHere),
// since only a context carries the rig to a proxy.
func runNetworkPhase(ctx context.Context, o Options, e *Env, checks []Check) (*Evidence, error) {
	rig, err := newNetRig()
	if err != nil {
		return nil, err
	}
	defer rig.Close()
	ctx = egresstest.With(ctx, rig.hook())
	p := o.warmPolicy(netPolicy(e.P), "network-"+e.C.Token)
	if p.Warm != (policy.Warm{}) {
		if o.KeepHere == nil {
			return nil, errors.New("the network phase runs warm only through a keeper in this process, and none was given (selftest.Options.KeepHere)")
		}
		stop, err := o.KeepHere(ctx, p)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	tcp, udp := rig.directAddrs()
	pe := *e
	pe.Net = &netEnv{Proxy: egress.ForwardAddr, HostHdrProxy: egress.ForwardAddr, TunnelProxy: egress.ForwardAddr, DirectTCP: tcp, DirectUDP: udp}
	argv, err := probe.Argv(o.Backend.SelfPath(), "phase-network-"+e.C.Token, probe.Plan{Steps: phaseSteps(&pe, checks, PhaseNetwork, false)})
	if err != nil {
		return nil, err
	}
	stdout := output.NewCapture(1 << 20)
	stderr := &syncWriter{w: &bytes.Buffer{}}
	res, err := sandbox.Run(ctx, o.Backend, sandbox.Request{
		Policy: p, Timeout: 2 * time.Minute, NoAudit: true, NoGate: true,
		Command: backends.Command{Argv: argv},
		Streams: backends.Streams{Stdout: stdout, Stderr: stderr},
	})
	if err != nil {
		return nil, fmt.Errorf("the sandbox did not run: %w", err)
	}
	ev := &Evidence{Result: res.Result, Stderr: stderr.String(), Net: rig.record(res.Network)}
	if ev.Obs, err = probe.ParseObservations(strings.NewReader(stdout.String())); err != nil && len(ev.Obs) == 0 {
		return ev, err
	}
	return ev, nil
}

// networkControl runs the network phase's steps on the host through a
// proxy of its own that allows every name of the phase and every address
// (the rules the checks prove removed), with a rig of its own: each
// hostile check's control sees its canary reached or its address dialled.
// NET-25's and NET-26's ask their canaries directly; NET-27's reaches the host canaries.
func networkControl(ctx context.Context, o Options, e *Env, checks []Check) *Evidence {
	ev := &Evidence{Host: true}
	rig, err := newNetRig()
	if err != nil {
		return ev
	}
	defer rig.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return ev
	}
	var rules []allow.Rule
	for n := range netTargets {
		rules = append(rules, allow.Rule{Host: n, Port: 80, From: "selftest control"})
	}
	h := rig.hook()
	px, err := egress.Serve(ctx, egress.Config{Rules: rules, Resolver: h.Resolver, Dial: h.Dial,
		TestUpstreams: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}}, ln)
	if err != nil {
		return ev
	}
	tcp, udp := rig.directAddrs()
	ce := *e
	ce.Net = &netEnv{Proxy: ln.Addr().String(), HostHdrProxy: rig.http[netHostHdr].Addr().String(),
		TunnelProxy: rig.http[netTunnel].Addr().String(), DirectTCP: tcp, DirectUDP: udp}
	obs, err := runHostPlan(ctx, o.SelfHost, &ce, probe.Plan{Steps: phaseSteps(&ce, checks, PhaseNetwork, true)})
	_ = px.Close()
	if err != nil {
		return ev
	}
	ev.Obs, ev.Net = obs, rig.record(px.Decisions())
	return ev
}
