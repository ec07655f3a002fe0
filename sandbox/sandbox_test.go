package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/audit"
	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// secretValue is the caller's secret every redaction test plants.
const secretValue = "tok-1234567890abcdef"

// fakeBackend stands in for a container backend in unit tests of Run: it
// hands out one scripted fakeSandbox and counts what it was asked to do.
type fakeBackend struct {
	caps     []policy.Capability
	startErr error
	sb       *fakeSandbox

	mu        sync.Mutex
	starts    int
	startOpts []backends.StartOptions
}

func newFake() *fakeBackend {
	return &fakeBackend{caps: profiles.Capabilities(), sb: &fakeSandbox{id: "fake-0123456789ab"}}
}

// without drops capabilities from what the fake claims to enforce.
func (b *fakeBackend) without(drop ...policy.Capability) *fakeBackend {
	b.caps = slices.DeleteFunc(slices.Clone(b.caps), func(c policy.Capability) bool { return slices.Contains(drop, c) })
	return b
}

func (b *fakeBackend) Name() string                                               { return "fake" }
func (b *fakeBackend) Capabilities() []policy.Capability                          { return b.caps }
func (b *fakeBackend) Available(context.Context) error                            { return nil }
func (b *fakeBackend) Ready(context.Context, *policy.Policy) error                { return nil }
func (b *fakeBackend) Sweep(context.Context) ([]string, error)                    { return nil, nil }
func (b *fakeBackend) SelfPath() string                                           { return backends.InitPath }
func (b *fakeBackend) Describe(context.Context, *policy.Policy) map[string]string { return nil }
func (b *fakeBackend) Render(*policy.Policy, backends.Command) (backends.Artifact, error) {
	return nil, errors.New("the fake backend renders nothing")
}

func (b *fakeBackend) Start(_ context.Context, _ *policy.Policy, opts backends.StartOptions) (backends.Sandbox, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.starts++
	b.startOpts = append(b.startOpts, opts)
	if b.startErr != nil {
		return nil, b.startErr
	}
	return b.sb, nil
}

func (b *fakeBackend) startCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.starts
}

// fakeSandbox runs no command: Exec prints the scripted output and returns
// the scripted result.
type fakeSandbox struct {
	id             string
	stdout, stderr string
	result         backends.Result
	execErr        error
	closeErr       error
	warnings       []string
	// flood: Exec prints until ctx is done, then reports Canceled.
	flood bool
	// closeEntered is closed when Close is called; Close then waits for
	// closeRelease (when set) before it returns.
	closeEntered chan struct{}
	closeRelease chan struct{}

	mu       sync.Mutex
	events   []string // "exec", "close", in order
	execs    []backends.Command
	closes   int
	floodCtx error // context.Cause seen by a flood when it stopped
	flooded  int64
}

func (s *fakeSandbox) ID() string { return s.id }
func (s *fakeSandbox) Scratch() policy.ScratchPaths {
	return policy.ScratchPaths{Home: "/home/sandbox", Tmp: "/tmp"}
}
func (s *fakeSandbox) Warnings() []string { return s.warnings }

func (s *fakeSandbox) Exec(ctx context.Context, cmd backends.Command, out backends.Streams) (backends.Result, error) {
	s.mu.Lock()
	s.events = append(s.events, "exec")
	s.execs = append(s.execs, cmd)
	s.mu.Unlock()
	if s.flood {
		return s.floodUntilDone(ctx, out)
	}
	if s.stdout != "" {
		io.WriteString(out.Stdout, s.stdout) //nolint:errcheck // a test sink
	}
	if s.stderr != "" {
		io.WriteString(out.Stderr, s.stderr) //nolint:errcheck // a test sink
	}
	return s.result, s.execErr
}

// floodUntilDone prints 64 KiB lines until ctx is cancelled (as a real
// backend kills the command); past 64 MiB it gives up so a broken ceiling
// fails the test instead of hanging it.
func (s *fakeSandbox) floodUntilDone(ctx context.Context, out backends.Streams) (backends.Result, error) {
	line := append(bytes.Repeat([]byte("x"), 64<<10-1), '\n')
	var n int64
	for n < 64<<20 {
		if ctx.Err() != nil {
			s.mu.Lock()
			s.floodCtx, s.flooded = context.Cause(ctx), n
			s.mu.Unlock()
			return backends.Result{Canceled: true, ExitCode: 130, Sandbox: s.id, Duration: time.Millisecond}, nil
		}
		out.Stdout.Write(line) //nolint:errcheck // the stream never fails
		n += int64(len(line))
	}
	return backends.Result{Sandbox: s.id}, errors.New("flood: the context was never cancelled")
}

func (s *fakeSandbox) Close(context.Context) error {
	s.mu.Lock()
	s.events = append(s.events, "close")
	s.closes++
	entered, release := s.closeEntered, s.closeRelease
	s.mu.Unlock()
	if entered != nil {
		close(entered)
	}
	if release != nil {
		<-release
	}
	return s.closeErr
}

func (s *fakeSandbox) record() (events []string, execs []backends.Command, closes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events), slices.Clone(s.execs), s.closes
}

// testHost is a caller with a home of its own and a secret in its environment.
func testHost(t *testing.T, root string) policy.Host {
	t.Helper()
	return policy.Host{
		Home: t.TempDir(), UID: 1000, GID: 1000, OS: "linux", Cwd: root,
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "X_TOKEN=" + secretValue},
	}
}

// newPolicy builds role's default policy for the fake backend on a fresh workspace.
func newPolicy(t *testing.T, role profiles.Role) *policy.Policy {
	t.Helper()
	root := t.TempDir()
	p, err := policy.Build(config.Default(root), role, testHost(t, root), policy.Options{Backend: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newRedactor() *output.Redactor {
	return output.NewRedactor([]output.Secret{{Name: "X_TOKEN", Value: secretValue}}, output.DefaultRules())
}

// readAudit decodes every record of the JSONL audit log; a missing log is no records.
func readAudit(t *testing.T, path string) []audit.Record {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []audit.Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r audit.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return recs
}

// oneRecord expects exactly one audit record.
func oneRecord(t *testing.T, p *policy.Policy) audit.Record {
	t.Helper()
	recs := readAudit(t, p.AuditLog)
	if len(recs) != 1 {
		t.Fatalf("want 1 audit record in %s, got %d: %+v", p.AuditLog, len(recs), recs)
	}
	return recs[0]
}

func request(p *policy.Policy, argv ...string) Request {
	return Request{Policy: p, Command: backends.Command{Argv: argv}, Streams: backends.Streams{Stdout: io.Discard, Stderr: io.Discard}}
}

func TestRunExitCodes(t *testing.T) {
	cases := []struct {
		name     string
		res      backends.Result
		wantCode int
		wantSig  int
	}{
		{"success", backends.Result{ExitCode: 0}, 0, 0},
		{"own code", backends.Result{ExitCode: 3}, 3, 0},
		{"not found", backends.Result{ExitCode: exitcode.NotFound}, exitcode.NotFound, 0},
		{"timed out", backends.Result{TimedOut: true, ExitCode: 137, Signal: 9}, exitcode.Timeout, 9},
		{"timed out without a code", backends.Result{TimedOut: true}, exitcode.Timeout, 0},
		{"killed by SIGKILL", backends.Result{ExitCode: exitcode.SignalBase + 9, Signal: 9}, 137, 9},
		{"killed by SIGSEGV", backends.Result{ExitCode: exitcode.SignalBase + 11, Signal: 11}, 139, 11},
		{"out of memory", backends.Result{ExitCode: 137, Signal: 9, OOMKilled: true}, 137, 9},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPolicy(t, profiles.RoleReproducer)
			b := newFake()
			b.sb.result = tc.res
			b.sb.result.Sandbox = b.sb.id
			out, err := Run(context.Background(), b, request(p, "python3", "repro.py"))
			if err != nil {
				t.Fatal(err)
			}
			if got := ExitCode(out.Result); got != tc.wantCode {
				t.Errorf("ExitCode = %d, want %d", got, tc.wantCode)
			}
			if out.Signal != tc.wantSig || out.TimedOut != tc.res.TimedOut || out.OOMKilled != tc.res.OOMKilled {
				t.Errorf("outcome %+v does not carry the backend's result %+v", out.Result, tc.res)
			}
			rec := oneRecord(t, p)
			if rec.ExitCode != tc.wantCode || rec.TimedOut != tc.res.TimedOut || rec.OOMKilled != tc.res.OOMKilled || rec.Error != "" {
				t.Errorf("audit record %+v, want exit_code %d timed_out %v oom_killed %v", rec, tc.wantCode, tc.res.TimedOut, tc.res.OOMKilled)
			}
		})
	}
}

func TestRunClosesOnce(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(*fakeSandbox)
		wantErr string
	}{
		{"success", func(*fakeSandbox) {}, ""},
		{"non-zero exit", func(s *fakeSandbox) { s.result.ExitCode = 1 }, ""},
		{"exec error", func(s *fakeSandbox) { s.execErr = errors.New("the sandbox container ended under the command") }, "ended under the command"},
		{"exec error and close error", func(s *fakeSandbox) {
			s.execErr = errors.New("exec broke")
			s.closeErr = errors.New("removing container: gone")
		}, "exec broke"},
		{"close error", func(s *fakeSandbox) { s.closeErr = errors.New("removing container: daemon busy") }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPolicy(t, profiles.RoleAgent)
			b := newFake()
			tc.setup(b.sb)
			_, err := Run(context.Background(), b, request(p, "ls", "-la"))
			if tc.wantErr == "" && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
			events, execs, closes := b.sb.record()
			if b.startCount() != 1 || len(execs) != 1 || closes != 1 {
				t.Errorf("starts %d, execs %d, closes %d; want 1 each", b.startCount(), len(execs), closes)
			}
			if !slices.Equal(events, []string{"exec", "close"}) {
				t.Errorf("events %v, want exec then close", events)
			}
		})
	}
}

// TestRunReturnsAfterClose: Run must not return while the sandbox is still
// being removed.
func TestRunReturnsAfterClose(t *testing.T) {
	for _, execErr := range []error{nil, errors.New("exec failed")} {
		t.Run(fmt.Sprint("exec error ", execErr != nil), func(t *testing.T) {
			p := newPolicy(t, profiles.RoleAgent)
			b := newFake()
			b.sb.execErr = execErr
			b.sb.closeEntered, b.sb.closeRelease = make(chan struct{}), make(chan struct{})
			done := make(chan error, 1)
			go func() {
				_, err := Run(context.Background(), b, request(p, "true"))
				done <- err
			}()
			select {
			case <-b.sb.closeEntered:
			case <-time.After(10 * time.Second):
				t.Fatal("Close was never called")
			}
			select {
			case err := <-done:
				t.Fatalf("Run returned (err %v) while Close was still blocked", err)
			case <-time.After(100 * time.Millisecond):
			}
			close(b.sb.closeRelease)
			select {
			case err := <-done:
				if (err != nil) != (execErr != nil) {
					t.Errorf("err = %v, want %v", err, execErr)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return after Close was released")
			}
		})
	}
}

// TestRunFailureAudited: a sandbox that cannot start or cannot run the
// command is an error (exit 125), and the record says so.
func TestRunFailureAudited(t *testing.T) {
	cases := []struct {
		name       string
		setup      func(*fakeBackend)
		wantErr    string
		wantCloses int
	}{
		{"start fails", func(b *fakeBackend) { b.startErr = errors.New("creating the sandbox container: no such image") }, "no such image", 0},
		{"exec fails", func(b *fakeBackend) { b.sb.execErr = errors.New("creating the command in the sandbox: daemon gone") }, "daemon gone", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPolicy(t, profiles.RoleReproducer)
			b := newFake()
			tc.setup(b)
			_, err := Run(context.Background(), b, request(p, "node", "repro.js"))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
			if _, _, closes := b.sb.record(); closes != tc.wantCloses {
				t.Errorf("closes = %d, want %d", closes, tc.wantCloses)
			}
			rec := oneRecord(t, p)
			if rec.ExitCode != exitcode.Refused || !strings.Contains(rec.Error, tc.wantErr) {
				t.Errorf("audit record exit_code %d error %q, want %d and the error text", rec.ExitCode, rec.Error, exitcode.Refused)
			}
			if !slices.Equal(rec.Argv, []string{"node", "repro.js"}) || rec.Role != p.Role || rec.PolicyHash != p.Hash() {
				t.Errorf("audit record %+v does not describe the refused run", rec)
			}
		})
	}
}

func TestRunEmptyArgv(t *testing.T) {
	for _, argv := range [][]string{nil, {}, {""}, {"", "x"}} {
		t.Run(fmt.Sprintf("%q", argv), func(t *testing.T) {
			p := newPolicy(t, profiles.RoleAgent)
			b := newFake()
			_, err := Run(context.Background(), b, request(p, argv...))
			if err == nil || !strings.Contains(err.Error(), "empty command") {
				t.Fatalf("error %v, want an empty-command refusal", err)
			}
			if b.startCount() != 0 {
				t.Errorf("the backend was started %d times for an empty command", b.startCount())
			}
			if rec := oneRecord(t, p); rec.ExitCode != exitcode.Refused || !strings.Contains(rec.Error, "empty command") {
				t.Errorf("audit record %+v, want exit_code 125 and the refusal", rec)
			}
		})
	}
}

func TestRunCapabilities(t *testing.T) {
	t.Run("missing is refused", func(t *testing.T) {
		p := newPolicy(t, profiles.RoleAgent)
		b := newFake().without(profiles.CapOwnLoopback)
		_, err := Run(context.Background(), b, request(p, "true"))
		if err == nil {
			t.Fatal("a backend lacking own_loopback ran a loopback-only policy")
		}
		for _, want := range []string{"own_loopback", "accept_weaker"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
		if b.startCount() != 0 {
			t.Errorf("Start called %d times", b.startCount())
		}
		if rec := oneRecord(t, p); rec.ExitCode != exitcode.Refused || !strings.Contains(rec.Error, "own_loopback") {
			t.Errorf("audit record %+v, want the refusal", rec)
		}
	})
	t.Run("accepted is weakened", func(t *testing.T) {
		p := newPolicy(t, profiles.RoleAgent)
		p.Accepted = []policy.Capability{profiles.CapOwnLoopback}
		b := newFake().without(profiles.CapOwnLoopback)
		out, err := Run(context.Background(), b, request(p, "true"))
		if err != nil {
			t.Fatal(err)
		}
		if b.startCount() != 1 {
			t.Errorf("Start called %d times, want 1", b.startCount())
		}
		if !slices.Equal(out.Weakened, []policy.Capability{profiles.CapOwnLoopback}) {
			t.Errorf("Weakened = %v, want [own_loopback]", out.Weakened)
		}
	})
	t.Run("all present", func(t *testing.T) {
		p := newPolicy(t, profiles.RoleAgent)
		out, err := Run(context.Background(), newFake(), request(p, "true"))
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Weakened) != 0 {
			t.Errorf("Weakened = %v with every capability present", out.Weakened)
		}
	})
}

func TestRunTimeout(t *testing.T) {
	cases := []struct {
		name     string
		role     profiles.Role
		override time.Duration
	}{
		{"agent default", profiles.RoleAgent, 0},
		{"reproducer default", profiles.RoleReproducer, 0},
		{"shorter override", profiles.RoleReproducer, 7 * time.Second},
		{"longer override", profiles.RoleAgent, time.Hour},
		{"negative is the default", profiles.RoleAgent, -time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPolicy(t, tc.role)
			b := newFake()
			req := request(p, "sleep", "1")
			req.Timeout = tc.override
			// What the caller left in the command is not the timeout: the
			// request's (or the policy's) is.
			req.Command.Timeout = 3 * time.Millisecond
			if _, err := Run(context.Background(), b, req); err != nil {
				t.Fatal(err)
			}
			want := p.Timeout()
			if tc.override > 0 {
				want = tc.override
			}
			_, execs, _ := b.sb.record()
			if len(execs) != 1 || execs[0].Timeout != want {
				t.Fatalf("the backend saw %+v, want Timeout %s", execs, want)
			}
			if !slices.Equal(execs[0].Argv, []string{"sleep", "1"}) {
				t.Errorf("argv %q", execs[0].Argv)
			}
			if len(b.startOpts) != 1 || b.startOpts[0].TTL != backends.TTL(p, want) {
				t.Errorf("StartOptions %+v, want TTL %s", b.startOpts, backends.TTL(p, want))
			}
			if b.startOpts[0].TTL < want {
				t.Errorf("TTL %s is shorter than the command's timeout %s", b.startOpts[0].TTL, want)
			}
		})
	}
}

func TestRunOutputCeiling(t *testing.T) {
	p := newPolicy(t, profiles.RoleReproducer)
	p.Output.Ceiling = 1 << 20
	b := newFake()
	b.sb.flood = true
	var stdout bytes.Buffer
	req := request(p, "yes")
	req.Streams.Stdout = &stdout
	req.Redactor = newRedactor()
	out, err := Run(context.Background(), b, req)
	if err != nil {
		t.Fatal(err)
	}
	if !out.OutputCeiling || out.Canceled {
		t.Errorf("OutputCeiling %v Canceled %v, want true and false", out.OutputCeiling, out.Canceled)
	}
	if ExitCode(out.Result) != 137 || out.Signal != 9 {
		t.Errorf("exit %d signal %d, want 137 and 9", ExitCode(out.Result), out.Signal)
	}
	b.sb.mu.Lock()
	cause, flooded := b.sb.floodCtx, b.sb.flooded
	b.sb.mu.Unlock()
	if !errors.Is(cause, ErrOutputCeiling) {
		t.Errorf("the command was stopped with cause %v, want ErrOutputCeiling", cause)
	}
	if flooded <= p.Output.Ceiling || flooded > p.Output.Ceiling+(128<<10) {
		t.Errorf("the command printed %d bytes before it was stopped; the ceiling is %d", flooded, p.Output.Ceiling)
	}
	if out.Stdout.BytesIn != flooded {
		t.Errorf("stdout stats count %d bytes, the command printed %d", out.Stdout.BytesIn, flooded)
	}
	if limit := int(p.Output.Limit) + 1024; stdout.Len() > limit {
		t.Errorf("the stream received %d bytes, more than the output limit %d allows", stdout.Len(), p.Output.Limit)
	}
	rec := oneRecord(t, p)
	if !rec.OutputCeiling || rec.ExitCode != 137 || rec.Canceled || rec.StdoutBytes != flooded {
		t.Errorf("audit record %+v, want output_ceiling, exit_code 137 and the byte count", rec)
	}
}

func TestRunRedaction(t *testing.T) {
	p := newPolicy(t, profiles.RoleAgent)
	b := newFake()
	b.sb.stdout = "the token is " + secretValue + "\n"
	b.sb.stderr = "error: bad token " + secretValue + " rejected\n"
	b.sb.result = backends.Result{ExitCode: 1, Sandbox: b.sb.id}
	var stdout, stderr bytes.Buffer
	req := request(p, "curl", "-H", "Authorization: "+secretValue, "http://127.0.0.1/")
	req.Streams = backends.Streams{Stdout: &stdout, Stderr: &stderr}
	req.Redactor = newRedactor()
	out, err := Run(context.Background(), b, req)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String()} {
		if strings.Contains(got, secretValue) {
			t.Errorf("%s shows the secret: %q", name, got)
		}
		if !strings.Contains(got, "<redacted:X_TOKEN>") {
			t.Errorf("%s = %q, want the redaction marker", name, got)
		}
	}
	if out.Stdout.BytesIn != int64(len(b.sb.stdout)) || out.Stderr.BytesIn != int64(len(b.sb.stderr)) {
		t.Errorf("stats count %d/%d bytes, the command printed %d/%d", out.Stdout.BytesIn, out.Stderr.BytesIn, len(b.sb.stdout), len(b.sb.stderr))
	}
	// The backend itself gets the real argv: only what is shown or kept is redacted.
	if _, execs, _ := b.sb.record(); len(execs) != 1 || !slices.Contains(execs[0].Argv, "Authorization: "+secretValue) {
		t.Errorf("the backend saw %+v, want the argv unchanged", execs)
	}
	raw, err := os.ReadFile(p.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(secretValue)) {
		t.Errorf("the audit log holds the secret: %s", raw)
	}
	rec := oneRecord(t, p)
	if want := []string{"curl", "-H", "Authorization: <redacted:X_TOKEN>", "http://127.0.0.1/"}; !slices.Equal(rec.Argv, want) {
		t.Errorf("audit argv %q, want %q", rec.Argv, want)
	}

	t.Run("error text", func(t *testing.T) {
		p := newPolicy(t, profiles.RoleAgent)
		b := newFake()
		b.sb.execErr = errors.New("exec " + secretValue + ": refused")
		req := request(p, "echo", secretValue)
		req.Redactor = newRedactor()
		if _, err := Run(context.Background(), b, req); err == nil {
			t.Fatal("want the exec error")
		}
		rec := oneRecord(t, p)
		if strings.Contains(rec.Error, secretValue) || strings.Contains(strings.Join(rec.Argv, " "), secretValue) {
			t.Errorf("audit record holds the secret: %+v", rec)
		}
	})

	t.Run("no redactor, raw output", func(t *testing.T) {
		p := newPolicy(t, profiles.RoleAgent)
		b := newFake()
		b.sb.stdout = "probe " + secretValue + "\n"
		var stdout bytes.Buffer
		req := request(p, "probe")
		req.Streams.Stdout = &stdout
		if _, err := Run(context.Background(), b, req); err != nil {
			t.Fatal(err)
		}
		if stdout.String() != b.sb.stdout {
			t.Errorf("without a redactor the stream is raw: got %q, want %q", stdout.String(), b.sb.stdout)
		}
	})
}

func TestRunAuditRecord(t *testing.T) {
	p := newPolicy(t, profiles.RoleReproducer)
	b := newFake()
	b.sb.stdout = "hello\n"
	b.sb.stderr = "warn\n"
	b.sb.result = backends.Result{ExitCode: 2, Duration: 1500 * time.Millisecond, Sandbox: "container-abc"}
	req := request(p, "python3", "-c", "print('hello')")
	req.Redactor = newRedactor()
	before := time.Now().UTC().Add(-time.Second)
	if _, err := Run(context.Background(), b, req); err != nil {
		t.Fatal(err)
	}
	rec := oneRecord(t, p)
	checks := []struct {
		field string
		ok    bool
	}{
		{"role", rec.Role == profiles.RoleReproducer},
		{"backend", rec.Backend == "fake"},
		{"policy_hash", rec.PolicyHash == p.Hash() && strings.HasPrefix(rec.PolicyHash, "sha256:")},
		{"exit_code", rec.ExitCode == 2},
		{"duration_ms", rec.DurationMS == 1500},
		{"sandbox", rec.Sandbox == "container-abc"},
		{"argv", slices.Equal(rec.Argv, []string{"python3", "-c", "print('hello')"})},
		{"time", !rec.Time.Before(before) && !rec.Time.After(time.Now().UTC().Add(time.Second))},
		{"gate", rec.Gate != ""},
		{"byte counts", rec.StdoutBytes == 6 && rec.StderrBytes == 5},
		{"flags", !rec.TimedOut && !rec.OOMKilled && !rec.Canceled && !rec.OutputCeiling && !rec.Truncated},
		{"no error", rec.Error == ""},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("audit record %s wrong: %+v", c.field, rec)
		}
	}
	// The file's keys are the documented ones.
	raw, err := os.ReadFile(p.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(raw), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"role", "backend", "policy_hash", "exit_code", "duration_ms", "sandbox", "argv"} {
		if _, ok := m[k]; !ok {
			t.Errorf("audit line lacks %q: %s", k, raw)
		}
	}
	if fi, err := os.Stat(p.AuditLog); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("audit log mode: %v %v", fi.Mode(), err)
	}

	t.Run("appends", func(t *testing.T) {
		if _, err := Run(context.Background(), b, request(p, "true")); err != nil {
			t.Fatal(err)
		}
		if recs := readAudit(t, p.AuditLog); len(recs) != 2 || !slices.Equal(recs[1].Argv, []string{"true"}) {
			t.Errorf("records %+v, want the second run appended", recs)
		}
	})

	t.Run("NoAudit", func(t *testing.T) {
		for name, setup := range map[string]func(*fakeBackend, *Request){
			"ran":     func(*fakeBackend, *Request) {},
			"refused": func(b *fakeBackend, _ *Request) { b.startErr = errors.New("no") },
			"empty":   func(_ *fakeBackend, r *Request) { r.Command.Argv = nil },
			"exec":    func(b *fakeBackend, _ *Request) { b.sb.execErr = errors.New("no") },
		} {
			p := newPolicy(t, profiles.RoleAgent)
			b := newFake()
			req := request(p, "true")
			req.NoAudit = true
			setup(b, &req)
			Run(context.Background(), b, req) //nolint:errcheck // only the log matters here
			if _, err := os.Stat(p.AuditLog); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: NoAudit wrote %s (%v)", name, p.AuditLog, err)
			}
		}
	})
}

func TestRunAuditFailure(t *testing.T) {
	// unwritable points the audit log under a regular file: it cannot be created.
	unwritable := func(t *testing.T, p *policy.Policy) {
		file := filepath.Join(t.TempDir(), "a-file")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		p.AuditLog = filepath.Join(file, "audit.jsonl")
	}
	t.Run("ran", func(t *testing.T) {
		p := newPolicy(t, profiles.RoleAgent)
		unwritable(t, p)
		b := newFake()
		b.sb.result.ExitCode = 4
		out, err := Run(context.Background(), b, request(p, "true"))
		if err != nil {
			t.Fatalf("a failed audit changed the outcome: %v", err)
		}
		if ExitCode(out.Result) != 4 {
			t.Errorf("exit code %d, want the command's 4", ExitCode(out.Result))
		}
		if len(out.Warnings) != 1 || !strings.Contains(out.Warnings[0], "audit") {
			t.Errorf("Warnings = %q, want one about the audit log", out.Warnings)
		}
	})
	for name, setup := range map[string]func(*fakeBackend, *Request){
		"start fails":  func(b *fakeBackend, _ *Request) { b.startErr = errors.New("the daemon said no") },
		"exec fails":   func(b *fakeBackend, _ *Request) { b.sb.execErr = errors.New("the daemon said no") },
		"empty argv":   func(_ *fakeBackend, r *Request) { r.Command.Argv = []string{""} },
		"capabilities": func(b *fakeBackend, _ *Request) { b.without(profiles.CapPidNamespace) },
	} {
		t.Run(name, func(t *testing.T) {
			p := newPolicy(t, profiles.RoleAgent)
			unwritable(t, p)
			b := newFake()
			req := request(p, "true")
			setup(b, &req)
			out, err := Run(context.Background(), b, req)
			if err == nil {
				t.Fatal("want the refusal")
			}
			msg := err.Error()
			if strings.Count(msg, "audit record was not written") != 1 || strings.Contains(msg, "\n") {
				t.Errorf("error %q, want one line naming the refusal and the audit failure once", msg)
			}
			if !strings.Contains(msg, "the daemon said no") && !strings.Contains(msg, "empty command") && !strings.Contains(msg, "pid_namespace") {
				t.Errorf("error %q lost the refusal", msg)
			}
			if len(out.Warnings) != 0 {
				t.Errorf("Warnings = %q; the refusal already says it", out.Warnings)
			}
		})
	}
}

func TestRunCloseError(t *testing.T) {
	closeErr := errors.New("removing container 0123456789ab: daemon busy (run `triage-sandbox gc`)")
	t.Run("becomes a warning", func(t *testing.T) {
		p := newPolicy(t, profiles.RoleAgent)
		b := newFake()
		b.sb.closeErr = closeErr
		out, err := Run(context.Background(), b, request(p, "true"))
		if err != nil {
			t.Fatalf("a failed removal after the command ran is not an error: %v", err)
		}
		if !slices.Equal(out.Warnings, []string{closeErr.Error()}) {
			t.Errorf("Warnings = %q, want the close error", out.Warnings)
		}
	})
	t.Run("not twice when the sandbox warns of it too", func(t *testing.T) {
		p := newPolicy(t, profiles.RoleAgent)
		b := newFake()
		b.sb.closeErr = closeErr
		b.sb.warnings = []string{closeErr.Error()}
		out, err := Run(context.Background(), b, request(p, "true"))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(out.Warnings, []string{closeErr.Error()}) {
			t.Errorf("Warnings = %q, want the close error once", out.Warnings)
		}
	})
	t.Run("sandbox warnings pass", func(t *testing.T) {
		p := newPolicy(t, profiles.RoleAgent)
		b := newFake()
		b.sb.warnings = []string{"something for gc"}
		out, err := Run(context.Background(), b, request(p, "true"))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(out.Warnings, []string{"something for gc"}) {
			t.Errorf("Warnings = %q", out.Warnings)
		}
	})
}

// TestSessionCommands: a session takes several commands, each on the same
// path (timeout, audit), and is closed once by its owner.
func TestSessionCommands(t *testing.T) {
	p := newPolicy(t, profiles.RoleAgent)
	b := newFake()
	sess, err := Start(context.Background(), b, p, backends.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sess.Sandbox().ID() != b.sb.id {
		t.Errorf("session sandbox %q", sess.Sandbox().ID())
	}
	for i, argv := range [][]string{{"git", "status"}, {"ls"}, {""}} {
		req := request(nil, argv...)
		req.Timeout = time.Duration(i+1) * time.Second
		_, err := sess.Exec(context.Background(), req)
		if (err != nil) != (argv[0] == "") {
			t.Errorf("%q: err %v", argv, err)
		}
	}
	if err := sess.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, execs, closes := b.sb.record()
	if len(execs) != 2 || execs[0].Timeout != time.Second || execs[1].Timeout != 2*time.Second || closes != 1 {
		t.Errorf("execs %+v closes %d", execs, closes)
	}
	recs := readAudit(t, p.AuditLog)
	if len(recs) != 3 || recs[2].ExitCode != exitcode.Refused {
		t.Errorf("want 3 records, the last refused: %+v", recs)
	}
	if _, err := Start(context.Background(), b, nil, backends.StartOptions{}); err == nil {
		t.Error("Start accepted a nil policy")
	}
}
