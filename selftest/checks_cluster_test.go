package selftest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/inside/probe"
)

// TestClusterCheckJudge: a cluster network check fails when the target's
// own answer arrived in the sandbox (whatever else happened), passes only
// when it did not and the control pod read it, and is inconclusive when
// the control did not read every target's answer or did not run: a
// refusal or a timeout in the sandbox is no answer, and proves nothing
// without the control.
func TestClusterCheckJudge(t *testing.T) {
	targets := []backends.NetTarget{
		{ID: "listener", Kind: "pod", What: "the listener pod", Addr: "10.0.0.9:8080", Expect: "tok-1"},
		{ID: "api-0", Kind: "apiserver", What: "the API server", Addr: "10.0.0.1:6443", Send: "GET", Expect: "HTTP/1."},
	}
	answered := map[string]string{"listener": "tok-1\n", "api-0": "HTTP/1.0 400 Bad Request"}
	checks := clusterChecks()
	i := slices.IndexFunc(checks, func(c Check) bool { return c.ID == "NET-40" })
	ch := checks[i]
	obs := func(o probe.Observation) *Evidence {
		return &Evidence{Obs: map[string]probe.Observation{"NET-40-listener": o}}
	}
	tests := []struct {
		name       string
		control    map[string]string
		controlErr error
		sandbox    probe.Observation
		want       string
	}{
		{"answer arrived", answered, nil, probe.Observation{OK: true, Values: map[string]string{"read": "tok-1\n"}}, StatusFail},
		{"answer arrived, control blind", map[string]string{}, nil, probe.Observation{OK: true, Values: map[string]string{"read": "tok-1\n"}}, StatusFail},
		{"refused, control read it", answered, nil, probe.Observation{Errno: "ECONNREFUSED"}, StatusOK},
		{"timed out, control read it", answered, nil, probe.Observation{Errno: "ETIMEDOUT"}, StatusOK},
		{"someone else answered", answered, nil, probe.Observation{OK: true, Values: map[string]string{"read": "other"}}, StatusOK},
		{"refused, control read nothing", map[string]string{"listener": ""}, nil, probe.Observation{Errno: "ECONNREFUSED"}, StatusInconclusive},
		{"refused, control read another answer", map[string]string{"listener": "tok-2"}, nil, probe.Observation{Errno: "ECONNREFUSED"}, StatusInconclusive},
		{"refused, control did not run", nil, errors.New("exec refused"), probe.Observation{Errno: "ECONNREFUSED"}, StatusInconclusive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &Env{Cluster: &clusterNet{targets: targets, control: tt.control, controlErr: tt.controlErr}}
			control := judgeControl(e, ch, &Evidence{Host: true}, nil)
			r := judge(e, ch, obs(tt.sandbox), nil, control)
			if r.Status != tt.want {
				t.Errorf("%s, want %s: %s; control %s", r.Status, tt.want, r.Evidence, r.Control)
			}
		})
	}
	// No target of the kind: never ok.
	e := &Env{Cluster: &clusterNet{targets: targets[1:], control: answered}}
	if r := judge(e, ch, &Evidence{Obs: map[string]probe.Observation{}}, nil, judgeControl(e, ch, &Evidence{Host: true}, nil)); r.Status != StatusInconclusive {
		t.Errorf("no listener target: %s, want %s", r.Status, StatusInconclusive)
	}
}

// TestClusterStepsNotOnHost: the host control runs no connect of a
// cluster check (the host may route a pod address off this machine).
func TestClusterStepsNotOnHost(t *testing.T) {
	e := &Env{Cluster: &clusterNet{targets: []backends.NetTarget{{ID: "api-0", Kind: "apiserver", Addr: "10.0.0.1:6443", Expect: "HTTP/1."},
		{ID: "dns-0", Kind: "dns", Proto: "udp", Addr: "10.0.0.10:53", DNS: "kubernetes.default", Expect: "dns answer"}}}}
	for _, ch := range clusterChecks() {
		for _, s := range ch.Steps(e) {
			if h := hostStep(s); h.Op != "uname" || len(h.List) != 0 {
				t.Errorf("%s: the host control runs %+v", ch.ID, h)
			}
		}
	}
	if steps := clusterChecks()[1].Steps(e); len(steps) != 1 || steps[0].Op != "tcp_token" {
		t.Errorf("NET-41's steps in the sandbox: %+v", steps)
	}
	if steps := clusterChecks()[2].Steps(e); len(steps) != 1 || steps[0].Op != "udp_token" || steps[0].Args["dns"] != "kubernetes.default" {
		t.Errorf("NET-42's steps in the sandbox: %+v", steps)
	}
}

// TestNoClusterNoChecks: a backend with no shared network gets no
// cluster target, so planRole drops the checks (startClusterNet: nil).
func TestNoClusterNoChecks(t *testing.T) {
	cn, err := startClusterNet(context.Background(), fakeBackendForCluster{}, nil)
	if cn != nil || err != nil {
		t.Errorf("startClusterNet for a backend with no shared network: %v %v", cn, err)
	}
}

type fakeBackendForCluster struct{ backends.Backend }
