package kubernetes

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/runtimes"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// TestJudgePids: the node's podPidsLimit holds the policy's pids when set
// and at most it (the sandbox then stops at it), under gVisor whenever set
// (it bounds gVisor's host tasks; the sandbox stops at its own limit),
// and refuses otherwise with one line naming the node, what it found and
// the way out.
func TestJudgePids(t *testing.T) {
	for _, tt := range []struct {
		name        string
		limit, pids int64
		gvisor      bool
		stop        int64
		want        []string // in the refusal; none: holds
	}{
		{"equal holds", 512, 512, false, 512, nil},
		{"lower holds, stops there", 256, 512, false, 256, nil},
		{"unset refuses", -1, 512, false, 0, []string{"node n1 sets no podPidsLimit", "at most 512", `accept_weaker = ["pids_limit"]`}},
		{"zero is unset", 0, 512, false, 0, []string{"sets no podPidsLimit"}},
		{"larger refuses", 4096, 1024, false, 0, []string{"node n1's podPidsLimit is 4096, above the policy's pids 1024", "raise [sandbox] pids to 4096", `accept_weaker = ["pids_limit"]`}},
		{"gVisor: larger holds", 4096, 1024, true, 1024, nil},
		{"gVisor: unset refuses", -1, 1024, true, 0, []string{"sets no podPidsLimit"}},
	} {
		stop, err := judgePids("n1", tt.limit, tt.pids, tt.gvisor)
		if len(tt.want) == 0 {
			if err != nil || stop != tt.stop {
				t.Errorf("%s: stop %d, %v; want stop %d, no error", tt.name, stop, err, tt.stop)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: held, want a refusal", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", tt.name, err, w)
			}
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: more than one line: %q", tt.name, err)
		}
	}
}

// TestGVisorFitsTheNode: under gVisor the supervisor's RLIMIT_NPROC is
// lowered to what the node's podPidsLimit holds of gVisor's host tasks
// (about two a task: a reproducer's 296 past 512 ended the whole pod), and
// left as it is where the node's limit is not known or is wide.
func TestGVisorFitsTheNode(t *testing.T) {
	p := rolePolicy(t, profiles.RoleReproducer, nil)
	rt := runtimes.Of("runsc")
	nprocOf := func(nodePids int64) uint64 {
		for _, r := range execRlimits(p, rt, nodePids) {
			if r.Name == "NPROC" {
				return r.Value
			}
		}
		t.Fatalf("no RLIMIT_NPROC under gVisor: %+v", execRlimits(p, rt, nodePids))
		return 0
	}
	unknown, wide, node := nprocOf(0), nprocOf(1<<20), nprocOf(512)
	if unknown != wide || node >= unknown || node > (512-128)/2 || node < 100 {
		t.Errorf("RLIMIT_NPROC: %d with the node's limit unknown, %d under 1M, %d under 512; want the last lowered to at most %d", unknown, wide, node, (512-128)/2)
	}
	if rl := execRlimits(p, runtimes.Of(""), 512); slices.ContainsFunc(rl, func(r protocol.Rlimit) bool { return r.Name == "NPROC" }) {
		t.Errorf("RLIMIT_NPROC outside gVisor: %+v", rl)
	}
}

// TestParsePodPidsLimit: a configz answer's podPidsLimit, absent is none;
// an answer that is no kubelet configuration refuses, and so does a limit
// under cgroupsPerQOS: false (it reaches no pod).
func TestParsePodPidsLimit(t *testing.T) {
	for _, tt := range []struct {
		raw     string
		want    int64
		wantErr bool
	}{
		{`{"kubeletconfig":{"podPidsLimit":512,"address":"10.0.0.1"}}`, 512, false},
		{`{"kubeletconfig":{"podPidsLimit":-1}}`, -1, false},
		{`{"kubeletconfig":{"address":"10.0.0.1"}}`, -1, false},
		{`{"kubeletconfig":{"podPidsLimit":512,"cgroupsPerQOS":true}}`, 512, false},
		// No pod cgroup: the limit is set nowhere.
		{`{"kubeletconfig":{"podPidsLimit":512,"cgroupsPerQOS":false}}`, 0, true},
		{`{"kubeletconfig":{"podPidsLimit":-1,"cgroupsPerQOS":false}}`, -1, false},
		{`{"other":{}}`, 0, true},
		{`<html>proxy error</html>`, 0, true},
	} {
		got, err := parsePodPidsLimit("n1", []byte(tt.raw))
		if (err != nil) != tt.wantErr || err == nil && got != tt.want {
			t.Errorf("%s: %d, %v; want %d, error %v", tt.raw, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestNodePidsCache: a read limit stands for nodePidsTTL per node, then is
// read again; a failed read is not kept.
func TestNodePidsCache(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	c := newNodePids(func() time.Time { return now })
	reads := 0
	read := func(v int64, err error) func() (int64, error) {
		return func() (int64, error) { reads++; return v, err }
	}
	steps := []struct {
		name      string
		key       string
		advance   time.Duration
		read      func() (int64, error)
		want      int64
		wantReads int
		wantErr   bool
	}{
		{"first start reads", "a", 0, read(512, nil), 512, 1, false},
		{"held within the TTL", "a", nodePidsTTL - time.Second, read(-1, nil), 512, 1, false},
		{"another node reads", "b", 0, read(0, errors.New("forbidden")), 0, 2, true},
		{"a failure is not kept", "b", 0, read(256, nil), 256, 3, false},
		{"read again after the TTL", "a", 2 * time.Second, read(-1, nil), -1, 4, false},
	}
	for _, s := range steps {
		now = now.Add(s.advance)
		got, err := c.get(s.key, s.read)
		if (err != nil) != s.wantErr || reads != s.wantReads || err == nil && got != s.want {
			t.Fatalf("%s: %d, %v, reads %d; want %d, error %v, reads %d", s.name, got, err, reads, s.want, s.wantErr, s.wantReads)
		}
	}
}

// TestRenderSaysPidsDemanded: the rendering says the podPidsLimit the
// start demands of the node (the summary's pids), none once pids_limit is
// accepted (the check skipped).
func TestRenderSaysPidsDemanded(t *testing.T) {
	p := rolePolicy(t, profiles.RoleReproducer, nil)
	p.Base.Image = "img"
	b := &Backend{}
	for _, tt := range []struct {
		accepted []policy.Capability
		want     int64
	}{{nil, p.Limits.Pids}, {[]policy.Capability{profiles.CapPidsLimit}, 0}} {
		p.Accepted = tt.accepted
		art, err := b.Render(p, backends.Command{Argv: []string{"true"}})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := art.Summary()
		if err != nil {
			t.Fatal(err)
		}
		if sum.Pids != tt.want || p.Limits.Pids == 0 {
			t.Errorf("accepted %v: rendered pids %d, want %d", tt.accepted, sum.Pids, tt.want)
		}
	}
}
