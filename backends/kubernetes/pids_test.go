package kubernetes

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestJudgePids: the node's podPidsLimit holds the policy's pids when set
// and at most it (lower said), and refuses otherwise with one line naming
// the node, what it found and the way out.
func TestJudgePids(t *testing.T) {
	for _, tt := range []struct {
		name        string
		limit, pids int64
		lower       bool
		want        []string // in the refusal; none: holds
	}{
		{"equal holds", 512, 512, false, nil},
		{"lower holds, said", 256, 512, true, nil},
		{"unset refuses", -1, 512, false, []string{"node n1 sets no podPidsLimit", "at most 512", `accept_weaker = ["pids_limit"]`}},
		{"zero is unset", 0, 512, false, []string{"sets no podPidsLimit"}},
		{"larger refuses", 4096, 1024, false, []string{"node n1's podPidsLimit is 4096, above the policy's pids 1024", "raise [sandbox] pids to 4096", `accept_weaker = ["pids_limit"]`}},
	} {
		lower, err := judgePids("n1", tt.limit, tt.pids)
		if len(tt.want) == 0 {
			if err != nil || lower != tt.lower {
				t.Errorf("%s: lower %v, %v; want lower %v, no error", tt.name, lower, err, tt.lower)
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
