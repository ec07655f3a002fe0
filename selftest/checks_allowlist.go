package selftest

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/inside/probe"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// netEnv is where the network phase's steps go: the proxy (the sandbox's
// forwarder, or the control's own proxy), the proxy NET-25 asks (the
// control asks the canary directly: the proxy always refuses the
// mismatch, so only the canary can show it answers), NET-26's (the same)
// and NET-27's
// host-loopback canaries.
type netEnv struct {
	Proxy, HostHdrProxy  string
	TunnelProxy          string // NET-26's, as NET-25's
	DirectTCP, DirectUDP string
}

// allowNeeds: the checks mean something only where the backend renders an
// allow-list (its own loopback and the host's proxy).
var allowNeeds = []policy.Capability{profiles.CapOwnLoopback, profiles.CapEgressProxy}

func (e *Env) net() netEnv {
	if e.Net == nil {
		return netEnv{Proxy: egress.ForwardAddr, HostHdrProxy: egress.ForwardAddr, TunnelProxy: egress.ForwardAddr}
	}
	return *e.Net
}

func proxyGet(id, url, host string, proxy func(netEnv) string) func(e *Env) []probe.Step {
	return func(e *Env) []probe.Step {
		return one(step(id, "proxy_get", map[string]string{"proxy": proxy(e.net()), "url": url, "host": host}))
	}
}

func viaProxy(n netEnv) string { return n.Proxy }

// netJudge: escaped when the proxy allowed a request for one of hosts, or
// dialled one of dials, or a canary of hits saw a request.
func netJudge(hosts, dials, hits []string) func(*Env, *Evidence) (bool, string) {
	return func(_ *Env, ev *Evidence) (bool, string) {
		rec := ev.Net
		if rec == nil {
			return false, "no record of the proxy's decisions"
		}
		var seen []string
		for _, d := range rec.Decisions {
			if slices.Contains(hosts, d.Host) {
				if d.Allowed {
					return true, fmt.Sprintf("the proxy allowed %s:%d (rule %s, address %s)", d.Host, d.Port, d.Rule, d.Addr)
				}
				seen = append(seen, fmt.Sprintf("%s refused: %s", d.Host, d.Reason))
			}
		}
		for _, a := range rec.Dials {
			if slices.Contains(dials, a) {
				return true, "the proxy dialled " + a
			}
		}
		for _, n := range hits {
			if rec.Hits[n] > 0 {
				return true, fmt.Sprintf("the canary of %s received %d request(s)", n, rec.Hits[n])
			}
		}
		if len(seen) == 0 {
			return false, "the proxy recorded no decision for " + strings.Join(hosts, ", ") + "; nothing dialled, no canary reached"
		}
		return false, strings.Join(seen, "; ") + "; nothing dialled, no canary reached"
	}
}

// proxyUnasked: a check whose request never got the proxy's answer (the
// forwarder or the proxy not there) tested nothing, and says so; with no
// record of the rig, nothing can be judged either.
func proxyUnasked(ids ...string) func(*Env, *Evidence) (bool, string) {
	return func(_ *Env, ev *Evidence) (bool, string) {
		if ev.Net == nil {
			return true, "no record of the proxy's decisions and the canaries: nothing to judge by"
		}
		for _, id := range ids {
			if o := ev.Obs[id]; o.Values["status"] == "" {
				return true, fmt.Sprintf("%s: the proxy did not answer (%s), so its rule was not tested", id, errnoEvidence(o))
			}
		}
		return false, ""
	}
}

// allowListChecks are NET-21 … NET-27: a sandbox whose network is an
// allow-list of the selftest's own names (netRules), run in the network
// phase, judged by the proxy's decisions and the canaries' records.
func allowListChecks() []Check {
	const fix = "the host-side proxy (package egress) must refuse it: see egress.go's order of decisions"
	return []Check{
		{ID: "NET-21", Name: "reach a name not on the allow-list", Category: "network", Requires: allowNeeds, Phase: PhaseNetwork,
			Steps: proxyGet("NET-21", "http://"+netUnlisted+"/", "", viaProxy),
			Judge: netJudge([]string{netUnlisted}, []string{"127.0.0.3:80"}, []string{netUnlisted}), Inconclusive: proxyUnasked("NET-21"), Fix: fix},
		{ID: "NET-22", Name: "reach the metadata address through the proxy", Category: "network", Requires: allowNeeds, Phase: PhaseNetwork,
			Steps: func(e *Env) []probe.Step {
				return slices.Concat(
					proxyGet("NET-22", "http://169.254.169.254/", "", viaProxy)(e),
					proxyGet("NET-22-name", "http://"+netMetadata+"/", "", viaProxy)(e))
			},
			Judge: netJudge([]string{"169.254.169.254", netMetadata}, []string{"169.254.169.254:80"}, nil), Inconclusive: proxyUnasked("NET-22", "NET-22-name"), Fix: fix},
		{ID: "NET-23", Name: "reach the host's loopback by an allowed name", Category: "network", Requires: allowNeeds, Phase: PhaseNetwork,
			Steps: proxyGet("NET-23", "http://"+netLoopback+"/", "", viaProxy),
			Judge: netJudge([]string{netLoopback}, []string{"127.0.0.1:80"}, nil), Inconclusive: proxyUnasked("NET-23"), Fix: fix},
		{ID: "NET-24", Name: "reach a private address by an allowed name", Category: "network", Requires: allowNeeds, Phase: PhaseNetwork,
			Steps: proxyGet("NET-24", "http://"+netPrivate+"/", "", viaProxy),
			Judge: netJudge([]string{netPrivate}, []string{"10.0.0.1:80"}, nil), Inconclusive: proxyUnasked("NET-24"), Fix: fix},
		{ID: "NET-25", Name: "ask the proxy with a Host header naming another host", Category: "network", Requires: allowNeeds, Phase: PhaseNetwork,
			Steps: proxyGet("NET-25", "http://"+netHostHdr+"/", netOther, func(n netEnv) string { return n.HostHdrProxy }),
			Judge: func(e *Env, ev *Evidence) (bool, string) {
				if ev.Host {
					// The control asked the canary itself.
					return netJudge(nil, nil, []string{netHostHdr})(e, ev)
				}
				return netJudge([]string{netHostHdr, netOther}, []string{"127.0.0.4:80", "127.0.0.5:80"}, []string{netHostHdr, netOther})(e, ev)
			}, Inconclusive: proxyUnasked("NET-25"), Fix: fix},
		{ID: "NET-26", Name: "relay a CONNECT inside an allowed tunnel", Category: "network", Requires: allowNeeds, Phase: PhaseNetwork,
			Steps: func(e *Env) []probe.Step {
				return one(step("NET-26", "proxy_connect", map[string]string{"proxy": e.net().TunnelProxy, "target": netTunnel + ":80", "inner": netInner + ":80"}))
			},
			Judge: func(e *Env, ev *Evidence) (bool, string) {
				if ev.Host {
					// The control asked the tunnel's canary itself.
					return netJudge(nil, nil, []string{netTunnel})(e, ev)
				}
				esc, why := netJudge([]string{netInner}, []string{"127.0.0.6:80", "127.0.0.7:80"}, []string{netTunnel, netInner})(e, ev)
				return esc, errnoEvidence(ev.Obs["NET-26"]) + "; " + why
			}, Inconclusive: proxyUnasked("NET-26"),
			Fix: "a CONNECT tunnel must open with a TLS ClientHello naming its host (egress/tunnel.go)"},
		{ID: "NET-28", Name: "download past the run's byte bound", Category: "network", Requires: allowNeeds, Phase: PhaseNetwork,
			Steps: func(e *Env) []probe.Step {
				return one(step("NET-28", "proxy_get", map[string]string{"proxy": e.net().Proxy, "url": "http://" + netBig + "/", "count": "body"}))
			},
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				o := ev.Obs["NET-28"]
				n, _ := strconv.ParseInt(o.Values["bytes"], 10, 64)
				cut := ""
				if ev.Net != nil {
					for _, d := range ev.Net.Decisions {
						if d.Host == netBig && d.Cut != "" {
							cut = "; the proxy: " + d.Cut
						}
					}
				}
				if n >= netBigSize {
					return true, fmt.Sprintf("all %d bytes arrived past a bound of %d%s", n, netMaxBytes, cut)
				}
				return false, fmt.Sprintf("%s; %d of %d bytes arrived%s", errnoEvidence(o), n, netBigSize, cut)
			},
			Inconclusive: func(e *Env, ev *Evidence) (bool, string) {
				if inc, why := proxyUnasked("NET-28")(e, ev); inc {
					return inc, why
				}
				if o := ev.Obs["NET-28"]; o.Values["status"] != "200" {
					return true, "the download was refused (" + errnoEvidence(o) + "), not cut: the bound was not tested"
				}
				return false, ""
			},
			Fix: "the proxy must count every byte of a run against Limits.MaxBytes and cut the connection past it"},
		{ID: "NET-27", Name: "reach the host's loopback around the proxy (TCP, UDP)", Category: "network", Requires: allowNeeds, Phase: PhaseNetwork,
			Steps: func(e *Env) []probe.Step {
				n := e.net()
				return []probe.Step{step("NET-27", "tcp_connect", nil, n.DirectTCP), step("NET-27-udp", "udp_send", nil, n.DirectUDP)}
			},
			Judge: func(_ *Env, ev *Evidence) (bool, string) {
				if ev.Net == nil {
					return false, "no record of the canaries"
				}
				if ev.Net.DirectHits > 0 {
					return true, fmt.Sprintf("the host-loopback canaries saw %d arrival(s)", ev.Net.DirectHits)
				}
				return false, fmt.Sprintf("%s; %s; the host-loopback canaries saw nothing", errnoEvidence(ev.Obs["NET-27"]), errnoEvidence(ev.Obs["NET-27-udp"]))
			},
			Inconclusive: proxyUnasked(),
			Fix:          "the sandbox's network namespace must hold only its own loopback, the proxy its only way out"},
	}
}

// allowedNameCheck is NET-20, the allow-list's control: an allowed name is
// reached through the proxy, the canary answering.
func allowedNameCheck() Check {
	return Check{ID: "NET-20", Name: "reach an allowed name through the proxy", Category: "network", Requires: allowNeeds,
		Phase: PhaseNetwork, Expect: Allowed, ControlOnHost: true,
		Steps: proxyGet("NET-20", "http://"+netAllowed+"/", "", viaProxy),
		Judge: func(_ *Env, ev *Evidence) (bool, string) {
			// Reached: the answer is the canary's and the canary saw the
			// request. The proxy's decision is recorded when the connection
			// ends, which may be after the run's record is taken: reported,
			// not required.
			o := ev.Obs["NET-20"]
			if ev.Net == nil {
				return false, "no record of the canaries"
			}
			allowed := slices.ContainsFunc(ev.Net.Decisions, func(d egress.Decision) bool { return d.Host == netAllowed && d.Allowed })
			ok := o.OK && strings.Contains(o.Detail, "canary-ok") && ev.Net.Hits[netAllowed] > 0
			return ok, fmt.Sprintf("%s; canary requests %d; the proxy's decision recorded: %v", errnoEvidence(o), ev.Net.Hits[netAllowed], allowed)
		},
		Fix: "the forwarder (inside/sandboxinit/forward.go) and the proxy's socket must reach the host's proxy"}
}
