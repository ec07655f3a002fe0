package selftest

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/inside/probe"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// TestAllowListJudges: each allow-list check fails on the record a proxy
// without its rule leaves (an allowed decision, a dial, a canary's
// arrival), and passes on the record of the refusal.
func TestAllowListJudges(t *testing.T) {
	checks := map[string]Check{}
	for _, ch := range Catalogue() {
		checks[ch.ID] = ch
	}
	refused := func(host string) *netRecord {
		return &netRecord{Decisions: []egress.Decision{{Host: host, Port: 80, Reason: "refused"}}, Hits: map[string]int{}}
	}
	allowed := func(host string) *netRecord {
		return &netRecord{Decisions: []egress.Decision{{Host: host, Port: 80, Allowed: true}}, Hits: map[string]int{}}
	}
	dialled := func(host, addr string) *netRecord {
		r := refused(host)
		r.Dials = []string{addr}
		return r
	}
	hit := func(host, canary string) *netRecord {
		r := refused(host)
		r.Hits[canary] = 1
		return r
	}
	for _, tt := range []struct {
		id      string
		rec     *netRecord
		escaped bool
	}{
		{"NET-21", refused(netUnlisted), false},
		{"NET-21", allowed(netUnlisted), true},          // the list not consulted
		{"NET-21", hit(netUnlisted, netUnlisted), true}, // its canary reached
		{"NET-21", dialled(netUnlisted, "127.0.0.3:80"), true},
		{"NET-22", refused(netMetadata), false},
		{"NET-22", allowed("169.254.169.254"), true},                 // an IP literal allowed
		{"NET-22", dialled(netMetadata, "169.254.169.254:80"), true}, // link-local not refused
		{"NET-23", refused(netLoopback), false},
		{"NET-23", dialled(netLoopback, "127.0.0.1:80"), true}, // loopback not refused
		{"NET-24", refused(netPrivate), false},
		{"NET-24", dialled(netPrivate, "10.0.0.1:80"), true}, // private not refused
		{"NET-25", refused(netHostHdr), false},
		{"NET-25", allowed(netHostHdr), true},       // the Host header not compared
		{"NET-25", hit(netHostHdr, netOther), true}, // the Host header followed
	} {
		ch := checks[tt.id]
		got, why := ch.Judge(&Env{}, &Evidence{Net: tt.rec})
		if got != tt.escaped {
			t.Errorf("%s on %+v: escaped %v (%s), want %v", tt.id, tt.rec, got, why, tt.escaped)
		}
	}
	net27 := checks["NET-27"]
	if got, _ := net27.Judge(&Env{}, &Evidence{Net: &netRecord{DirectHits: 1}}); !got {
		t.Error("NET-27 passes although a host-loopback canary saw an arrival")
	}
	if got, _ := net27.Judge(&Env{}, &Evidence{Net: &netRecord{}}); got {
		t.Error("NET-27 fails although no canary saw anything")
	}
	net20 := checks["NET-20"]
	ok := probe.Observation{OK: true, Detail: "HTTP/1.1 200 OK canary-ok"}
	for _, tt := range []struct {
		name string
		ev   *Evidence
		want bool
	}{
		{"reached", &Evidence{Obs: map[string]probe.Observation{"NET-20": ok}, Net: &netRecord{Hits: map[string]int{netAllowed: 1}}}, true},
		{"answered, canary never asked", &Evidence{Obs: map[string]probe.Observation{"NET-20": ok}, Net: &netRecord{Hits: map[string]int{}}}, false},
		{"refused", &Evidence{Obs: map[string]probe.Observation{"NET-20": {Detail: "HTTP/1.1 403 Forbidden"}}, Net: &netRecord{Hits: map[string]int{}}}, false},
		{"no record", &Evidence{Obs: map[string]probe.Observation{"NET-20": ok}}, false},
	} {
		if got, why := net20.Judge(&Env{}, tt.ev); got != tt.want {
			t.Errorf("NET-20 %s: %v (%s), want %v", tt.name, got, why, tt.want)
		}
	}
}

// TestNetPolicy: the network phase's policy is the role's with only the
// selftest's names allowed, on port 80, and the proxy settings set.
func TestNetPolicy(t *testing.T) {
	p := &policy.Policy{Network: policy.Network{Mode: policy.NetworkLoopback, Key: "[sandbox] network"},
		Env: []policy.EnvVar{{Name: "HTTP_PROXY", Value: "http://elsewhere"}, {Name: "PATH", Value: "/bin"}}}
	np := netPolicy(p)
	if np.Network.Mode != policy.NetworkProxy || p.Network.Mode != policy.NetworkLoopback {
		t.Fatalf("modes %q (the copy), %q (the role's)", np.Network.Mode, p.Network.Mode)
	}
	for _, r := range np.Network.Rules {
		if !strings.HasSuffix(r.Host, netSuffix) || r.Port != 80 {
			t.Errorf("rule %+v is not one of the selftest's names on port 80", r)
		}
		if r.Host == netUnlisted {
			t.Errorf("%s is on the list", netUnlisted)
		}
	}
	n := 0
	for _, v := range np.Env {
		if v.Name == "HTTP_PROXY" {
			n++
			if !strings.Contains(v.Value, egress.ForwardAddr) {
				t.Errorf("HTTP_PROXY=%s", v.Value)
			}
		}
	}
	if n != 1 {
		t.Errorf("HTTP_PROXY set %d times", n)
	}
}

// TestNetRigDialer: the rig's dialer connects only to its canaries and
// records every address asked for; its resolver knows only its names.
func TestNetRigDialer(t *testing.T) {
	rig, err := newNetRig()
	if err != nil {
		t.Fatal(err)
	}
	defer rig.Close()
	ctx := context.Background()
	for _, a := range []string{"127.0.0.1:80", "10.0.0.1:80", "169.254.169.254:80", "127.0.0.2:81"} {
		if c, err := rig.dial(ctx, "tcp", a); err == nil {
			c.Close()
			t.Errorf("the rig dialled %s", a)
		}
	}
	c, err := rig.dial(ctx, "tcp", "127.0.0.2:80")
	if err != nil {
		t.Fatalf("the allowed canary: %v", err)
	}
	c.Close()
	if _, err := rig.LookupNetIP(ctx, "ip", "example.org."); err == nil {
		t.Error("the rig's resolver answered a name not its own")
	}
	rec := rig.record(nil)
	if len(rec.Dials) != 5 {
		t.Errorf("dials recorded %v, want all 5", rec.Dials)
	}
}

// TestAllowListInconclusive: a request the proxy never answered, or a run
// without the rig's record, decides nothing (never ok).
func TestAllowListInconclusive(t *testing.T) {
	for _, ch := range Catalogue() {
		if ch.Phase != PhaseNetwork || ch.Expect != Blocked {
			continue
		}
		if inc, _ := ch.Inconclusive(&Env{}, &Evidence{}); !inc {
			t.Errorf("%s is decided without the rig's record", ch.ID)
		}
		if ch.ID == "NET-27" {
			continue
		}
		ev := &Evidence{Net: &netRecord{}, Obs: map[string]probe.Observation{}}
		for _, s := range ch.Steps(&Env{}) {
			ev.Obs[s.ID] = probe.Observation{Errno: "ECONNREFUSED"}
		}
		if inc, _ := ch.Inconclusive(&Env{}, ev); !inc {
			t.Errorf("%s is decided although the proxy never answered", ch.ID)
		}
	}
}

// TestByteBoundJudge: NET-28 fails when the whole download arrived, and
// is inconclusive when the download was refused instead of cut.
func TestByteBoundJudge(t *testing.T) {
	var ch Check
	for _, c := range Catalogue() {
		if c.ID == "NET-28" {
			ch = c
		}
	}
	obs := func(status string, n int) *Evidence {
		return &Evidence{Net: &netRecord{}, Obs: map[string]probe.Observation{"NET-28": {OK: status == "200",
			Values: map[string]string{"status": status, "bytes": strconv.Itoa(n)}}}}
	}
	if got, _ := ch.Judge(&Env{}, obs("200", netBigSize)); !got {
		t.Error("NET-28 passes although the whole download arrived")
	}
	if got, why := ch.Judge(&Env{}, obs("200", netMaxBytes)); got {
		t.Errorf("NET-28 fails on a cut download: %s", why)
	}
	if inc, _ := ch.Inconclusive(&Env{}, obs("403", 0)); !inc {
		t.Error("NET-28 is decided on a refused download")
	}
	if inc, _ := ch.Inconclusive(&Env{}, obs("200", 10)); inc {
		t.Error("NET-28 is inconclusive on a cut download")
	}
}
