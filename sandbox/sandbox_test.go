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
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/audit"
	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/testkit/backendtest"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/stage"
)

// secretValue is the caller's secret every redaction test plants.
const secretValue = "tok-1234567890abcdef"

// newFake is the fake backend handing out one scripted sandbox.
func newFake() *backendtest.Backend {
	return backendtest.NewShared(&backendtest.Sandbox{Name: "fake-0123456789ab"})
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
		{"copy back failed", backends.Result{ExitCode: 0, CopyBackError: "copying the outputs back: boom"}, exitcode.CopyBackFailed, 0},
		{"copy back failed after a failure", backends.Result{ExitCode: 2, CopyBackError: "copying the outputs back: boom"}, 2, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPolicy(t, profiles.RoleReproducer)
			b := newFake()
			b.Shared.Result = tc.res
			b.Shared.Result.Sandbox = b.Shared.Name
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
		setup   func(*backendtest.Sandbox)
		wantErr string
	}{
		{"success", func(*backendtest.Sandbox) {}, ""},
		{"non-zero exit", func(s *backendtest.Sandbox) { s.Result.ExitCode = 1 }, ""},
		{"exec error", func(s *backendtest.Sandbox) { s.ExecErr = errors.New("the sandbox container ended under the command") }, "ended under the command"},
		{"exec error and close error", func(s *backendtest.Sandbox) {
			s.ExecErr = errors.New("exec broke")
			s.CloseErr = errors.New("removing container: gone")
		}, "exec broke"},
		{"close error", func(s *backendtest.Sandbox) { s.CloseErr = errors.New("removing container: daemon busy") }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPolicy(t, profiles.RoleAgent)
			b := newFake()
			tc.setup(b.Shared)
			_, err := Run(context.Background(), b, request(p, "ls", "-la"))
			if tc.wantErr == "" && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
			events, execs, closes := b.Shared.Record()
			if b.Starts() != 1 || len(execs) != 1 || closes != 1 {
				t.Errorf("starts %d, execs %d, closes %d; want 1 each", b.Starts(), len(execs), closes)
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
			b.Shared.ExecErr = execErr
			b.Shared.CloseEntered, b.Shared.CloseRelease = make(chan struct{}), make(chan struct{})
			done := make(chan error, 1)
			go func() {
				_, err := Run(context.Background(), b, request(p, "true"))
				done <- err
			}()
			select {
			case <-b.Shared.CloseEntered:
			case <-time.After(10 * time.Second):
				t.Fatal("Close was never called")
			}
			select {
			case err := <-done:
				t.Fatalf("Run returned (err %v) while Close was still blocked", err)
			case <-time.After(100 * time.Millisecond):
			}
			close(b.Shared.CloseRelease)
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
		setup      func(*backendtest.Backend)
		wantErr    string
		wantCloses int
	}{
		{"start fails", func(b *backendtest.Backend) { b.StartErr = errors.New("creating the sandbox container: no such image") }, "no such image", 0},
		{"exec fails", func(b *backendtest.Backend) {
			b.Shared.ExecErr = errors.New("creating the command in the sandbox: daemon gone")
		}, "daemon gone", 1},
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
			if _, _, closes := b.Shared.Record(); closes != tc.wantCloses {
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
			if b.Starts() != 0 {
				t.Errorf("the backend was started %d times for an empty command", b.Starts())
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
		b := newFake().Without(profiles.CapOwnLoopback)
		_, err := Run(context.Background(), b, request(p, "true"))
		if err == nil {
			t.Fatal("a backend lacking own_loopback ran a loopback-only policy")
		}
		for _, want := range []string{"own_loopback", "accept_weaker"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
		if b.Starts() != 0 {
			t.Errorf("Start called %d times", b.Starts())
		}
		if rec := oneRecord(t, p); rec.ExitCode != exitcode.Refused || !strings.Contains(rec.Error, "own_loopback") {
			t.Errorf("audit record %+v, want the refusal", rec)
		}
	})
	t.Run("accepted is weakened", func(t *testing.T) {
		p := newPolicy(t, profiles.RoleAgent)
		p.Accepted = []policy.Capability{profiles.CapOwnLoopback}
		b := newFake().Without(profiles.CapOwnLoopback)
		out, err := Run(context.Background(), b, request(p, "true"))
		if err != nil {
			t.Fatal(err)
		}
		if b.Starts() != 1 {
			t.Errorf("Start called %d times, want 1", b.Starts())
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
			_, execs, _ := b.Shared.Record()
			if len(execs) != 1 || execs[0].Timeout != want {
				t.Fatalf("the backend saw %+v, want Timeout %s", execs, want)
			}
			if !slices.Equal(execs[0].Argv, []string{"sleep", "1"}) {
				t.Errorf("argv %q", execs[0].Argv)
			}
			if len(b.StartOptions()) != 1 || b.StartOptions()[0].TTL != backends.TTL(p, want) {
				t.Errorf("StartOptions %+v, want TTL %s", b.StartOptions(), backends.TTL(p, want))
			}
			if b.StartOptions()[0].TTL < want {
				t.Errorf("TTL %s is shorter than the command's timeout %s", b.StartOptions()[0].TTL, want)
			}
		})
	}
}

func TestRunOutputCeiling(t *testing.T) {
	p := newPolicy(t, profiles.RoleReproducer)
	p.Output.Ceiling = 1 << 20
	b := newFake()
	b.Shared.Flood = true
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
	cause, flooded := b.Shared.Flooded()
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
	b.Shared.Stdout = "the token is " + secretValue + "\n"
	b.Shared.Stderr = "error: bad token " + secretValue + " rejected\n"
	b.Shared.Result = backends.Result{ExitCode: 1, Sandbox: b.Shared.Name}
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
	if out.Stdout.BytesIn != int64(len(b.Shared.Stdout)) || out.Stderr.BytesIn != int64(len(b.Shared.Stderr)) {
		t.Errorf("stats count %d/%d bytes, the command printed %d/%d", out.Stdout.BytesIn, out.Stderr.BytesIn, len(b.Shared.Stdout), len(b.Shared.Stderr))
	}
	// The backend itself gets the real argv: only what is shown or kept is redacted.
	if _, execs, _ := b.Shared.Record(); len(execs) != 1 || !slices.Contains(execs[0].Argv, "Authorization: "+secretValue) {
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
		b.Shared.ExecErr = errors.New("exec " + secretValue + ": refused")
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
		b.Shared.Stdout = "probe " + secretValue + "\n"
		var stdout bytes.Buffer
		req := request(p, "probe")
		req.Streams.Stdout = &stdout
		if _, err := Run(context.Background(), b, req); err != nil {
			t.Fatal(err)
		}
		if stdout.String() != b.Shared.Stdout {
			t.Errorf("without a redactor the stream is raw: got %q, want %q", stdout.String(), b.Shared.Stdout)
		}
	})
}

func TestRunAuditRecord(t *testing.T) {
	p := newPolicy(t, profiles.RoleReproducer)
	b := newFake()
	b.Shared.Stdout = "hello\n"
	b.Shared.Stderr = "warn\n"
	b.Shared.Result = backends.Result{ExitCode: 2, Duration: 1500 * time.Millisecond, Sandbox: "container-abc"}
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
		for name, setup := range map[string]func(*backendtest.Backend, *Request){
			"ran":     func(*backendtest.Backend, *Request) {},
			"refused": func(b *backendtest.Backend, _ *Request) { b.StartErr = errors.New("no") },
			"empty":   func(_ *backendtest.Backend, r *Request) { r.Command.Argv = nil },
			"exec":    func(b *backendtest.Backend, _ *Request) { b.Shared.ExecErr = errors.New("no") },
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
		b.Shared.Result.ExitCode = 4
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
	for name, setup := range map[string]func(*backendtest.Backend, *Request){
		"start fails":  func(b *backendtest.Backend, _ *Request) { b.StartErr = errors.New("the daemon said no") },
		"exec fails":   func(b *backendtest.Backend, _ *Request) { b.Shared.ExecErr = errors.New("the daemon said no") },
		"empty argv":   func(_ *backendtest.Backend, r *Request) { r.Command.Argv = []string{""} },
		"capabilities": func(b *backendtest.Backend, _ *Request) { b.Without(profiles.CapPidNamespace) },
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
		b.Shared.CloseErr = closeErr
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
		b.Shared.CloseErr = closeErr
		b.Shared.Warns = []string{closeErr.Error()}
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
		b.Shared.Warns = []string{"something for gc"}
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
	if sess.Sandbox().ID() != b.Shared.Name {
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
	_, execs, closes := b.Shared.Record()
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

// A conflict is a warning and a structured entry, never a special file.
func TestConflictsAreWarnings(t *testing.T) {
	out := Outcome{Result: backends.Result{CopyBack: &stage.Report{Changes: []stage.Change{
		{Path: "/w/NOTES.md", Action: "conflict", Detail: "changed on the host meanwhile", KeptAs: "/w/NOTES.md.from-sandbox-x"},
		{Path: "/w/repros/fifo", Action: "dropped", Detail: "a FIFO is not copied to the host"},
	}}}}
	copyBackReport(&out)
	if len(out.Conflicts) != 1 || out.Conflicts[0].KeptAs == "" {
		t.Fatalf("conflicts %+v", out.Conflicts)
	}
	if len(out.Outputs.Leftovers) != 1 || out.Outputs.Leftovers[0].Kind != "dropped" {
		t.Errorf("special files %+v: only the dropped FIFO belongs there", out.Outputs.Leftovers)
	}
	if len(out.Warnings) != 1 || !strings.Contains(out.Warnings[0], "NOTES.md.from-sandbox-x") {
		t.Errorf("warnings %q must name where the sandbox's version is kept", out.Warnings)
	}
}

// attaching is a backend whose starts attach to a sandbox another process
// (a keeper) started: warm.Backend for a session or a pool.
type attaching struct{ *backendtest.Backend }

func (attaching) Attaches(*policy.Policy) bool { return true }

// TestSweepBesideOwnStartsOnly: a run that starts its own sandbox sweeps
// dead owners' leftovers beside the start (and waits for it); one that
// attaches to a keeper's sandbox sweeps nothing (the keeper does, beside
// its own starts).
func TestSweepBesideOwnStartsOnly(t *testing.T) {
	for _, tc := range []struct {
		name   string
		attach bool
		want   int
	}{{"own start", false, 1}, {"attached", true, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPolicy(t, profiles.RoleAgent)
			fake := newFake()
			var b backends.Backend = fake
			if tc.attach {
				b = attaching{fake}
			}
			if _, err := Run(context.Background(), b, request(p, "true")); err != nil {
				t.Fatal(err)
			}
			if n := fake.Sweeps(); n != tc.want {
				t.Errorf("%d sweeps by the run, want %d", n, tc.want)
			}
		})
	}
}
