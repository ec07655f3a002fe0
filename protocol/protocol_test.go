package protocol

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/stage"
)

var paths = []stage.Path{
	{Path: "/ws/repros", Kind: stage.KindDir},
	{Path: "/ws/NOTES.md", Kind: stage.KindFile},
	{Path: "/ws/link", Kind: stage.KindLink},
	{Path: "/ws", Kind: stage.KindSkeleton},
}

// roundTrip encodes spec for entry e and decodes it with decode.
func roundTrip[T any](t *testing.T, e Entry, spec T, decode func([]string) (T, error)) {
	t.Helper()
	argv, err := Argv("/bin/ts", e, spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(argv) != 3 || argv[0] != "/bin/ts" || argv[1] != string(e) {
		t.Fatalf("argv = %q", argv)
	}
	got, err := decode(argv[2:])
	if err != nil {
		t.Fatalf("decoding %s: %v", argv[2], err)
	}
	if !reflect.DeepEqual(got, spec) {
		t.Fatalf("round trip of %s:\n got %+v\nwant %+v", e, got, spec)
	}
}

func TestRoundTrip(t *testing.T) {
	t.Run("hold", func(t *testing.T) {
		for _, h := range []Hold{
			{},
			{Lifeline: true, TTL: Duration(90 * time.Second), Stage: paths},
			{ControlFD: 3},
			{ControlSock: "/.triage-sandbox/control.sock", Lifeline: true},
			{Lifeline: true, RunAs: &Identity{UID: 65534, GID: 65534}},
			{Lifeline: true, Forward: &Forward{Listen: "127.0.0.1:3128", Socket: "/run/triage-sandbox/egress/proxy.sock"}},
		} {
			roundTrip(t, EntryHold, h, DecodeHold)
		}
	})
	t.Run("exec", func(t *testing.T) {
		for _, x := range []Exec{
			{Argv: []string{"true"}},
			{Argv: []string{"sh", "-c", "echo -- --lifeline"}, Timeout: Duration(time.Minute), Grace: Duration(time.Second), Lifeline: true},
			{Argv: []string{"x"}, Seccomp: "default", ExportFD: 3, Export: &Export{Stage: paths, MaxEntries: 32768}},
			{Argv: []string{"x"}, Seccomp: "default", RunAs: &Identity{UID: 1000, GID: 0}},
			{Argv: []string{"x"}, Seccomp: "default", Rlimits: []Rlimit{{Name: "NPROC", Value: 168}}},
			{Argv: []string{"x"}, Rlimits: []Rlimit{{Name: "NOFILE", Value: 4096}, {Name: "FSIZE", Value: 1 << 30}, {Name: "CORE", Value: 0}}},
		} {
			roundTrip(t, EntryExec, x, DecodeExec)
		}
	})
	t.Run("export", func(t *testing.T) {
		roundTrip(t, EntryExport, Export{Stage: paths, MaxEntries: 10}, DecodeExport)
		roundTrip(t, EntryExport, Export{Stage: paths, RunAs: &Identity{UID: 65534, GID: 65534}}, DecodeExport)
	})
	t.Run("local", func(t *testing.T) {
		roundTrip(t, EntryLocal, Local{PlanFD: 3, Hold: Hold{ControlFD: 4, Lifeline: true, Stage: paths}}, DecodeLocal)
		roundTrip(t, EntryLocal, Local{PlanFD: 3, TraceFD: 5, Hold: Hold{ControlFD: 4}}, DecodeLocal)
	})
	t.Run("keeper", func(t *testing.T) {
		roundTrip(t, EntryKeeper, Keeper{Dir: "/run/user/0/triage-sandbox/warm", Host: "0123456789abcdef"}, DecodeKeeper)
	})
	t.Run("watch", func(t *testing.T) {
		roundTrip(t, EntryWatch, Watch{Owner: 42, OwnerStart: "314099", Remover: "/usr/bin/triage-sandbox"}, DecodeWatch)
		roundTrip(t, EntryWatchRemove, Watch{Owner: 42, OwnerStart: "314099", Remover: "/usr/bin/triage-sandbox"}, DecodeWatchRemove)
	})
	t.Run("probe", func(t *testing.T) {
		roundTrip(t, EntryProbe, Probe{Tag: "t1", Plan: ProbePlan{Steps: []ProbeStep{{ID: "FS-01", Op: "read_any",
			Args: map[string]string{"canary": "tok-123"}, List: []string{"/h/.ssh/id"}}}, ExitCode: 3, StderrMarker: "m"}}, DecodeProbe)
		roundTrip(t, EntryProbe, Probe{Tag: "t2"}, DecodeProbe)
	})
}

func TestDecodeRefuses(t *testing.T) {
	tests := []struct {
		name string
		dec  func([]string) error
		args []string
		want string
	}{
		{"no spec", decodeErr(DecodeHold), nil, "one argument"},
		{"two specs", decodeErr(DecodeHold), []string{env("{}"), env("{}")}, "one argument"},
		{"unknown field", decodeErr(DecodeHold), []string{env(`{"lifeline":true,"ttl2":"1s"}`)}, "unknown field"},
		{"trailing data", decodeErr(DecodeHold), []string{env(`{}`) + ` {}`}, "data after"},
		{"trailing data in the envelope", decodeErr(DecodeHold), []string{`{"protocol":3,"spec":{},"spec2":{}}`}, "unknown field"},
		{"no envelope", decodeErr(DecodeHold), []string{`{"lifeline":true}`}, "speaks protocol 0"},
		{"another version", decodeErr(DecodeExec), []string{`{"protocol":99,"spec":{"argv":["x"],"new":1}}`}, "speaks protocol 99, this inside binary"},
		{"no spec in the envelope", decodeErr(DecodeHold), []string{`{"protocol":3}`}, "no \"spec\""},
		{"negative ttl", decodeErr(DecodeHold), []string{env(`{"ttl":"-1s"}`)}, "negative"},
		{"numeric ttl", decodeErr(DecodeHold), []string{env(`{"ttl":5}`)}, "duration"},
		{"stdin as control", decodeErr(DecodeHold), []string{env(`{"control_fd":1}`)}, "above stderr"},
		{"two channels", decodeErr(DecodeHold), []string{env(`{"control_fd":3,"control_sock":"/s"}`)}, "not two"},
		{"relative socket", decodeErr(DecodeHold), []string{env(`{"control_sock":"s"}`)}, "absolute"},
		{"relative stage", decodeErr(DecodeHold), []string{env(`{"stage":[{"path":"ws","kind":"dir"}]}`)}, "absolute"},
		{"unknown kind", decodeErr(DecodeHold), []string{env(`{"stage":[{"path":"/ws","kind":"fifo"}]}`)}, "unknown kind"},
		{"empty argv", decodeErr(DecodeExec), []string{env(`{"argv":[]}`)}, "empty command"},
		{"export without fd", decodeErr(DecodeExec), []string{env(`{"argv":["x"],"export":{"stage":[]}}`)}, "both or neither"},
		{"fd without export", decodeErr(DecodeExec), []string{env(`{"argv":["x"],"export_fd":3}`)}, "both or neither"},
		{"old nproc field", decodeErr(DecodeExec), []string{env(`{"argv":["x"],"nproc":5}`)}, "unknown field"},
		{"negative rlimit", decodeErr(DecodeExec), []string{env(`{"argv":["x"],"rlimits":[{"name":"NOFILE","value":-1}]}`)}, "bad spec"},
		{"unknown rlimit", decodeErr(DecodeExec), []string{env(`{"argv":["x"],"rlimits":[{"name":"AS","value":1}]}`)}, "unknown limit"},
		{"prefixed rlimit", decodeErr(DecodeExec), []string{env(`{"argv":["x"],"rlimits":[{"name":"RLIMIT_NOFILE","value":1}]}`)}, "unknown limit"},
		{"rlimit twice", decodeErr(DecodeExec), []string{env(`{"argv":["x"],"rlimits":[{"name":"FSIZE","value":1},{"name":"FSIZE","value":2}]}`)}, "given twice"},
		{"rlimit without name", decodeErr(DecodeExec), []string{env(`{"argv":["x"],"rlimits":[{"value":1}]}`)}, "unknown limit"},
		{"rlimit field unknown", decodeErr(DecodeExec), []string{env(`{"argv":["x"],"rlimits":[{"name":"CORE","value":0,"soft":1}]}`)}, "unknown field"},
		{"negative max", decodeErr(DecodeExport), []string{env(`{"stage":[],"max_entries":-1}`)}, "negative"},
		{"local without plan", decodeErr(DecodeLocal), []string{env(`{"hold":{"control_fd":4}}`)}, "required"},
		{"local same fds", decodeErr(DecodeLocal), []string{env(`{"plan_fd":4,"hold":{"control_fd":4}}`)}, "both 4"},
		{"local trace fd on the plan's", decodeErr(DecodeLocal), []string{env(`{"plan_fd":3,"trace_fd":3,"hold":{"control_fd":4}}`)}, "also plan_fd"},
		{"local trace fd stderr", decodeErr(DecodeLocal), []string{env(`{"plan_fd":3,"trace_fd":2,"hold":{"control_fd":4}}`)}, "above stderr"},
		{"keeper relative", decodeErr(DecodeKeeper), []string{env(`{"dir":"warm","host":"0123456789abcdef"}`)}, "absolute"},
		{"keeper host not a key", decodeErr(DecodeKeeper), []string{env(`{"dir":"/w","host":"../x"}`)}, "16 hex"},
		{"probe plan not base64", decodeErr(DecodeProbe), []string{env(`{"tag":"x","plan":"{}"}`)}, "plan"},
		{"probe plan as an object", decodeErr(DecodeProbe), []string{env(`{"tag":"x","plan":{"steps":[]}}`)}, "base64"},
		{"probe plan unknown field", decodeErr(DecodeProbe), []string{env(`{"tag":"x","plan":"eyJzdGVwcyI6W10sIngiOjF9"}`)}, "unknown field"},
		{"probe plan trailing data", decodeErr(DecodeProbe), []string{env(`{"tag":"x","plan":"eyJzdGVwcyI6W119IHt9"}`)}, "data after"},
		{"probe step without op", decodeErr(DecodeProbe), []string{env(`{"tag":"x","plan":"eyJzdGVwcyI6W3siaWQiOiJhIn1dfQ"}`)}, "op are required"},
		{"probe exit code", decodeErr(DecodeProbe), []string{env(`{"tag":"x","plan":"eyJleGl0X2NvZGUiOjI1Nn0"}`)}, "0 to 255"},
		{"watch without owner", decodeErr(DecodeWatch), []string{env(`{"remover":"/b"}`)}, "required"},
		// A watcher of the build before one watcher carried many containers.
		{"watch one container", decodeErr(DecodeWatch), []string{env(`{"container":"abc","owner":1,"owner_start":"1","remover":"/b"}`)}, "unknown field"},
		{"watch without a remover", decodeErr(DecodeWatch), []string{env(`{"owner":1,"owner_start":"1"}`)}, "absolute path"},
		{"watch a relative remover", decodeErr(DecodeWatch), []string{env(`{"owner":1,"owner_start":"1","remover":"bin/triage-sandbox"}`)}, "absolute path"},
		{"not json", decodeErr(DecodeExec), []string{`--lifeline`}, "bad spec"},
		{"forward off the loopback", decodeErr(DecodeHold), []string{env(`{"forward":{"listen":"0.0.0.0:3128","socket":"/s"}}`)}, "loopback"},
		{"forward a name", decodeErr(DecodeHold), []string{env(`{"forward":{"listen":"localhost:3128","socket":"/s"}}`)}, "loopback"},
		{"forward port 0", decodeErr(DecodeHold), []string{env(`{"forward":{"listen":"127.0.0.1:0","socket":"/s"}}`)}, "loopback"},
		{"forward relative socket", decodeErr(DecodeHold), []string{env(`{"forward":{"listen":"127.0.0.1:3128","socket":"s"}}`)}, "clean absolute"},
		{"forward unclean socket", decodeErr(DecodeHold), []string{env(`{"forward":{"listen":"127.0.0.1:3128","socket":"/a/../s"}}`)}, "clean absolute"},
		{"forward unknown field", decodeErr(DecodeHold), []string{env(`{"forward":{"listen":"127.0.0.1:3128","socket":"/s","tcp":true}}`)}, "unknown field"},
		{"run as root", decodeErr(DecodeHold), []string{env(`{"run_as":{"uid":0,"gid":0}}`)}, "above 0"},
		{"run as a negative gid", decodeErr(DecodeExec), []string{env(`{"argv":["x"],"run_as":{"uid":1,"gid":-1}}`)}, "above 0"},
		{"run as past 2^31", decodeErr(DecodeExport), []string{env(`{"stage":[],"run_as":{"uid":2147483648,"gid":1}}`)}, "above 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.dec(tt.args)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// env wraps a spec in this version's envelope, as Argv does.
func env(spec string) string { return fmt.Sprintf(`{"protocol":%d,"spec":%s}`, Version, spec) }

func decodeErr[T any](d func([]string) (T, error)) func([]string) error {
	return func(a []string) error { _, err := d(a); return err }
}

func TestEntriesAreDistinctAndHidden(t *testing.T) {
	seen := map[Entry]bool{}
	for _, e := range Entries() {
		if seen[e] || !strings.HasPrefix(string(e), "__") || !IsEntry(string(e)) {
			t.Errorf("entry %q: duplicate or not hidden", e)
		}
		seen[e] = true
	}
	if IsEntry("run") || IsEntry("__init") {
		t.Error("IsEntry accepts a name that is no entry")
	}
}

func TestStatusRoundTrip(t *testing.T) {
	for _, s := range []Status{
		{State: StateAwaitingStage},
		{State: StateReady},
		{State: StateStagingFailed, Detail: "repros: 40000 entries, over 32768\nsecond line"},
		{State: StateHolderFailed, Detail: "no /proc"},
		{State: StateControlUnavailable, Detail: "dial unix /s: permission denied"},
	} {
		var b bytes.Buffer
		if err := WriteStatus(&b, s); err != nil {
			t.Fatal(err)
		}
		if strings.Count(b.String(), "\n") != 1 {
			t.Fatalf("status %+v written as %d lines", s, strings.Count(b.String(), "\n"))
		}
		s.Protocol = Version
		got := Statuses(b.Bytes())
		if len(got) != 1 || got[0] != s {
			t.Fatalf("Statuses(%q) = %+v, want %+v", b.String(), got, s)
		}
	}
}

func TestStatusesAreWholeLinesOnly(t *testing.T) {
	var ready bytes.Buffer
	_ = WriteStatus(&ready, Status{State: StateReady})
	line := strings.TrimSuffix(ready.String(), "\n")
	tests := []struct {
		name string
		out  string
		want int
	}{
		{"alone", line + "\n", 1},
		{"after other output", "tini: hello\n" + line + "\n", 1},
		{"not yet ended", line, 0},
		{"inside another line", "echo " + line + "\n", 0},
		{"indented", " " + line + "\n", 0},
		{"unknown state", `triage-sandbox-status {"protocol":3,"state":"pwned"}` + "\n", 0},
		{"extra field", `triage-sandbox-status {"protocol":3,"state":"ready","x":1}` + "\n", 0},
		{"not an object", `triage-sandbox-status "ready"` + "\n", 0},
		{"old text", "triage-sandbox: staged\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Statuses([]byte(tt.out)); len(got) != tt.want {
				t.Fatalf("Statuses(%q) = %+v, want %d", tt.out, got, tt.want)
			}
		})
	}
}

// TestStatusOfAnotherVersion: a status line of another build reads as a
// failed holder whatever its state, and says what to rebuild.
func TestStatusOfAnotherVersion(t *testing.T) {
	for _, line := range []string{
		`triage-sandbox-status {"state":"ready"}`,                     // before versions
		`triage-sandbox-status {"protocol":98,"state":"ready","x":1}`, // a later build, new fields
	} {
		got := Statuses([]byte(line + "\n"))
		if len(got) != 1 || got[0].State != StateHolderFailed {
			t.Fatalf("Statuses(%q) = %+v, want one failed holder", line, got)
		}
		err := got[0].Mismatch("the holder")
		if err == nil || !strings.Contains(err.Error(), "rebuild both") || strings.Contains(err.Error(), "\n") {
			t.Fatalf("Mismatch = %v, want one line that says to rebuild", err)
		}
	}
	var b bytes.Buffer
	_ = WriteStatus(&b, Status{State: StateReady})
	if s, ok := ParseStatus(strings.TrimSuffix(b.String(), "\n")); !ok || s.Mismatch("x") != nil {
		t.Fatalf("this build's ready = %+v, %v: want no mismatch", s, ok)
	}
}

func TestHuman(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("runc: something\n")
	// Progress is no reason: it is left out.
	_ = WriteStatus(&b, Status{State: StateAwaitingStage})
	_ = WriteStatus(&b, Status{State: StateStagingFailed, Detail: "too big"})
	if got, want := Human(b.Bytes()), "runc: something staging failed: too big"; got != want {
		t.Fatalf("Human = %q, want %q", got, want)
	}
}

// TestProbePlanHidesItsTokens: a probe's argv (which the supervisor's
// cmdline holds) does not name the canary tokens its plan carries, or
// FS-06 finds its own plan.
func TestProbePlanHidesItsTokens(t *testing.T) {
	const token = "canary-5f2c9"
	argv, err := Argv("/x", EntryProbe, Probe{Tag: "t", Plan: ProbePlan{Steps: []ProbeStep{{ID: "FS-06", Op: "proc_scan", Args: map[string]string{"token": token}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(argv, " "), token) {
		t.Fatalf("argv %q names the token", argv)
	}
	x, err := DecodeExec([]string{MustArgv("/x", EntryExec, Exec{Argv: argv})[2]})
	if err != nil || strings.Contains(strings.Join(x.Argv, " "), token) {
		t.Fatalf("the supervisor's spec: %v", err)
	}
}

// TestDonation: descriptors follow stderr in the order donated, and
// Files is what the child's ExtraFiles must be for those numbers to hold.
func TestDonation(t *testing.T) {
	var d Donation
	a, b := os.Stdin, os.Stdout
	if got := []int{d.Add(a), d.Add(b)}; got[0] != 3 || got[1] != 4 {
		t.Fatalf("descriptors %v, want 3 and 4", got)
	}
	if f := d.Files(); len(f) != 2 || f[0] != a || f[1] != b {
		t.Fatalf("files %v", f)
	}
}
