package selftest

import (
	"fmt"
	"os"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/inside/probe"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// networkChecks try to reach anything past the sandbox's own loopback.
func networkChecks() []Check {
	return []Check{
		{ID: "NET-01", Name: "reach the internet", Category: "network",
			Steps: func(e *Env) []probe.Step {
				return one(step("NET-01", "udp_route", nil, "1.1.1.1:53", "[2606:4700:4700::1111]:53"))
			},
			Judge: okJudge("NET-01"), Fix: "set [sandbox] network = false (loopback only)"},
		{ID: "NET-03", Name: "reach a DNS resolver", Category: "network",
			Steps: func(e *Env) []probe.Step { return one(step("NET-03", "udp_route", nil, resolvers()...)) },
			Judge: okJudge("NET-03"), Fix: "set [sandbox] network = false (loopback only)"},
		{ID: "NET-10", Name: "reach cloud metadata endpoints", Category: "network",
			Steps: func(e *Env) []probe.Step {
				return one(step("NET-10", "udp_route", nil, "169.254.169.254:80", "[fd00:ec2::254]:80", "100.100.100.200:80"))
			},
			Judge: okJudge("NET-10"), Fix: "set [sandbox] network = false (loopback only)"},
		{ID: "NET-13", Name: "open a hypervisor channel (AF_VSOCK)", Category: "network",
			// AF_VSOCK is 40 on Linux and on macOS.
			Steps: func(e *Env) []probe.Step {
				return one(step("NET-13", "socket_family", map[string]string{"family": "40"}))
			},
			Judge: okJudge("NET-13"),
			HostLacks: func(control *Evidence) (bool, string) {
				if o := control.Obs["NET-13"]; !o.OK && o.Errno == "EAFNOSUPPORT" {
					return true, "this host has no AF_VSOCK: there is no hypervisor channel to reach"
				}
				return false, ""
			},
			Fix: "the sandbox's seccomp profile must refuse AF_VSOCK sockets"},
		{ID: "NET-11", Name: "reach this machine's other addresses", Category: "network", Requires: []policy.Capability{profiles.CapOwnLoopback},
			Steps: func(e *Env) []probe.Step { return one(step("NET-11", "tcp_connect", nil, e.C.RemoteAddrs()...)) },
			Judge: func(e *Env, ev *Evidence) (bool, string) {
				o := ev.Obs["NET-11"]
				if o.OK || ev.RemoteHits > 0 {
					return true, fmt.Sprintf("%s; canary listener hits %d", errnoEvidence(o), ev.RemoteHits)
				}
				return false, errnoEvidence(o)
			},
			Fix: "use no network (NetworkMode none): bridge and internal networks reach the host"},
		{ID: "NET-12", Name: "reach services on the host's loopback", Category: "network", Requires: []policy.Capability{profiles.CapOwnLoopback},
			Steps: func(e *Env) []probe.Step { return one(step("NET-12", "tcp_connect", nil, e.C.Loopback.Addr)) },
			Judge: func(e *Env, ev *Evidence) (bool, string) {
				// 127.0.0.1 inside is the sandbox's own loopback: only a hit
				// on the host's listener means the host was reached.
				o := ev.Obs["NET-12"]
				if ev.LoopbackHits > 0 {
					return true, fmt.Sprintf("host loopback listener hit %d times", ev.LoopbackHits)
				}
				return false, "only the sandbox's own loopback answered (" + o.Detail + "); host listener hits 0"
			},
			Fix: "never share the host network namespace"},
	}
}

// resolvers returns this machine's DNS servers as host:53 (route lookups only).
func resolvers() []string {
	b, err := os.ReadFile("/etc/resolv.conf")
	var out []string
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && f[0] == "nameserver" {
				out = append(out, netJoin(f[1], "53"))
			}
		}
	}
	if len(out) == 0 {
		out = []string{"8.8.8.8:53"} // route lookup only; nothing is sent
	}
	return out
}

func netJoin(host, port string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}
