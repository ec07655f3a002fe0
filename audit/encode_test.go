package audit

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// TestEncodeIsJSONMarshal: the hand-written encoding is json.Marshal's,
// byte for byte, for the usual record and its odd cases.
func TestEncodeIsJSONMarshal(t *testing.T) {
	base := Record{Time: time.Date(2026, 12, 6, 20, 1, 2, 345678900, time.UTC), Role: "agent", Backend: "oci",
		Argv: []string{"true"}, PolicyHash: "sha256:abc", Gate: "allow", DurationMS: 4.321, StdoutBytes: 3}
	tests := []struct {
		name   string
		change func(r *Record)
	}{
		{"usual", func(*Record) {}},
		{"every flag and optional field", func(r *Record) {
			r.Config, r.TimedOut, r.OOMKilled, r.Canceled, r.OutputCeiling, r.Truncated = "/w/triage.toml", true, true, true, true, true
			r.Sandbox, r.Error, r.ExitCode, r.StderrBytes = "ts-1", "refused: no", -1, 1<<40
		}},
		{"html characters alone", func(r *Record) { r.Argv = []string{"a<b", "c>d", "e&f"} }},
		{"nil argv", func(r *Record) { r.Argv = nil }},
		{"empty argv", func(r *Record) { r.Argv = []string{} }},
		{"escapes", func(r *Record) {
			r.Argv = []string{"sh", "-c", "echo \"<a & b>\"\\\n\t\x00\x7f", "\u2028\u2029", "\xff\xfe", "héllo"}
		}},
		{"zone and zero nanoseconds", func(r *Record) { r.Time = time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)) }},
		{"zero time", func(r *Record) { r.Time = time.Time{} }},
		{"year out of json's range", func(r *Record) { r.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"duration 0", func(r *Record) { r.DurationMS = 0 }},
		{"duration tiny", func(r *Record) { r.DurationMS = 1e-7 }},
		{"duration huge", func(r *Record) { r.DurationMS = 1e22 }},
		{"duration whole", func(r *Record) { r.DurationMS = 1500 }},
		{"duration NaN", func(r *Record) { r.DurationMS = math.NaN() }},
		{"network", func(r *Record) { r.Network = []egress.Decision{{}} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := base
			tt.change(&r)
			same(t, r)
		})
	}
}

func same(t *testing.T, r Record) {
	t.Helper()
	want, werr := json.Marshal(r)
	got, gerr := encode(r)
	if string(got) != string(want) || (werr == nil) != (gerr == nil) {
		t.Errorf("encode:\n got %s (%v)\nwant %s (%v)", got, gerr, want, werr)
	}
}

// FuzzEncodeIsJSONMarshal: any strings, numbers and flags.
func FuzzEncodeIsJSONMarshal(f *testing.F) {
	f.Add("agent", "oci", "", "true", "x<y>&\"\\\n\xff", "sha256:1", "allow", 0, 1.5, int64(3), int64(0), "", "", int64(1765051262), 12345, uint8(0))
	f.Fuzz(func(t *testing.T, role, backend, config, a0, a1, hash, gate string, code int, dur float64, out, errb int64,
		sandbox, msg string, sec int64, nsec int, flags uint8) {
		r := Record{Time: time.Unix(sec%(1<<36), int64(nsec)).UTC(), Role: "", Backend: backend, Config: config,
			Argv: []string{a0, a1}, PolicyHash: hash, Gate: gate, ExitCode: code, DurationMS: dur,
			TimedOut: flags&1 != 0, OOMKilled: flags&2 != 0, Canceled: flags&4 != 0, OutputCeiling: flags&8 != 0,
			Truncated: flags&16 != 0, StdoutBytes: out, StderrBytes: errb, Sandbox: sandbox, Error: msg}
		r.Role = profiles.Role(role)
		same(t, r)
	})
}
