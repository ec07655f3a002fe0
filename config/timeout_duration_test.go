package config

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTimeoutBounds: every timeout key takes 1..86400 seconds; anything else
// is one problem naming the file, line, key and range. 9999999999 seconds
// used to overflow to a negative duration: no deadline at all.
func TestTimeoutBounds(t *testing.T) {
	const rng = "must be between 1 and 86400 seconds (24 hours)"
	tables := []struct{ table, key string }{
		{"[repro]", "repro.timeout"},
		{"[sandbox]", "sandbox.timeout"},
		{"[sandbox.agent]", "sandbox.agent.timeout"},
		{"[sandbox.reproducer]", "sandbox.reproducer.timeout"},
		{"[sandbox.guard]", "sandbox.guard.timeout"},
	}
	bad := []string{"0", "-5", "86401", "9999999999", "9223372036854775807", "-9223372036854775808"}
	for _, tb := range tables {
		for _, v := range bad {
			doc := "# timeouts\n" + tb.table + "\ntimeout = " + v + "\n"
			f, err := Parse("triage.toml", []byte(doc), "/ws")
			want := "triage.toml:3: " + tb.key + ": " + rng + ", got " + v
			if err == nil || err.Error() != want {
				t.Errorf("%s timeout = %s: got %v (file %v), want %q", tb.table, v, err, f != nil, want)
			}
		}
		for _, v := range []int{1, 120, 86400} {
			doc := tb.table + "\ntimeout = " + strconv.Itoa(v) + "\n"
			f, err := Parse("triage.toml", []byte(doc), "/ws")
			if err != nil {
				t.Errorf("%s timeout = %d: %v", tb.table, v, err)
				continue
			}
			var got *int
			switch tb.key {
			case "repro.timeout":
				got = f.Repro.Timeout
			case "sandbox.timeout":
				got = f.Sandbox.Timeout
			case "sandbox.agent.timeout":
				got = f.Agent.Timeout
			case "sandbox.reproducer.timeout":
				got = f.Reproducer.Timeout
			case "sandbox.guard.timeout":
				got = f.Guard.Timeout
			}
			if got == nil || *got != v {
				t.Errorf("%s timeout = %d read as %v", tb.table, v, got)
			}
		}
	}
}

func TestCheckTimeoutFlag(t *testing.T) {
	ok := []time.Duration{0, time.Second, 2 * time.Second, 90 * time.Minute, 24 * time.Hour}
	for _, d := range ok {
		if err := CheckTimeoutFlag(d); err != nil {
			t.Errorf("CheckTimeoutFlag(%s) = %v, want nil", d, err)
		}
	}
	bad := []struct {
		d    time.Duration
		want string
	}{
		{-5 * time.Second, "--timeout -5s: must be between 1s and 24h0m0s (or 0 for the role's default)"},
		{-1, "--timeout -1ns: must be between 1s and 24h0m0s (or 0 for the role's default)"},
		{500 * time.Millisecond, "--timeout 500ms: must be between 1s and 24h0m0s (or 0 for the role's default)"},
		{24*time.Hour + time.Second, "--timeout 24h0m1s: must be between 1s and 24h0m0s (or 0 for the role's default)"},
		{mustParse(t, "2562047h47m16s"), "--timeout 2562047h47m16s: must be between 1s and 24h0m0s (or 0 for the role's default)"},
		{math.MinInt64, "--timeout -2562047h47m16.854775808s: must be between 1s and 24h0m0s (or 0 for the role's default)"},
	}
	for _, tc := range bad {
		err := CheckTimeoutFlag(tc.d)
		if err == nil || err.Error() != tc.want {
			t.Errorf("CheckTimeoutFlag(%d) = %v, want %q", int64(tc.d), err, tc.want)
		}
	}
}

func TestTimeoutDuration(t *testing.T) {
	cases := []struct {
		seconds int
		want    time.Duration
	}{
		{1, time.Second}, {120, 2 * time.Minute}, {86400, 24 * time.Hour},
		// Only a File built in code can hold these; never a wrapped duration.
		{0, time.Second}, {-5, time.Second}, {86401, 24 * time.Hour},
		{9999999999, 24 * time.Hour}, {math.MaxInt, 24 * time.Hour}, {math.MinInt, time.Second},
	}
	for _, tc := range cases {
		if got := TimeoutDuration(tc.seconds); got != tc.want {
			t.Errorf("TimeoutDuration(%d) = %s, want %s", tc.seconds, got, tc.want)
		}
	}
}

func mustParse(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestDurationKeys: every duration-like key takes what --timeout takes (a
// Go duration string such as "5m") as well as an integer of seconds, as
// ai-triager's own triage.toml writes [repro] timeout. A bad value is one
// problem naming the file, line and key. `timeout = "5m"` used to be
// refused with "expected an integer" although `--timeout 5m` worked.
func TestDurationKeys(t *testing.T) {
	keys := []struct {
		table, key string
		rng        string
		get        func(f *File) *int
	}{
		{"[repro]", "repro.timeout", timeoutRange, func(f *File) *int { return f.Repro.Timeout }},
		{"[sandbox]", "sandbox.timeout", timeoutRange, func(f *File) *int { return f.Sandbox.Timeout }},
		{"[sandbox.agent]", "sandbox.agent.timeout", timeoutRange, func(f *File) *int { return f.Agent.Timeout }},
		{"[sandbox.reproducer]", "sandbox.reproducer.timeout", timeoutRange, func(f *File) *int { return f.Reproducer.Timeout }},
		{"[sandbox.guard]", "sandbox.guard.timeout", timeoutRange, func(f *File) *int { return f.Guard.Timeout }},
		{"[sandbox]", "sandbox.warm_idle", "must be between 10 and 86400 seconds", func(f *File) *int { return f.Sandbox.WarmIdle }},
		{"[sandbox.agent]", "sandbox.agent.warm_idle", "must be between 10 and 86400 seconds", func(f *File) *int { return f.Agent.WarmIdle }},
	}
	good := []struct {
		v    string
		want int
	}{
		{`"5m"`, 300}, {`"90s"`, 90}, {`"1h30m"`, 5400}, {`"24h"`, 86400}, {`"1m0.000s"`, 60}, {`300`, 300},
	}
	for _, k := range keys {
		name := k.key[strings.LastIndex(k.key, ".")+1:]
		for _, g := range good {
			f, err := Parse("triage.toml", []byte(k.table+"\n"+name+" = "+g.v+"\n"), "/ws")
			if err != nil {
				t.Errorf("%s %s = %s: %v", k.table, name, g.v, err)
				continue
			}
			if got := k.get(f); got == nil || *got != g.want {
				t.Errorf("%s %s = %s read as %v, want %d", k.table, name, g.v, got, g.want)
			}
		}
		rng := k.rng
		bad := []struct{ v, want string }{
			{`"5 minutes"`, `"5 minutes" is not a duration; write seconds as an integer (` + name + ` = 300) or a duration with a unit ("90s", "5m", "1h30m")`},
			{`"300"`, `"300" is not a duration; write seconds as an integer (` + name + ` = 300) or a duration with a unit ("90s", "5m", "1h30m")`},
			{`""`, `"" is not a duration; write seconds as an integer (` + name + ` = 300) or a duration with a unit ("90s", "5m", "1h30m")`},
			{`"90.5s"`, `"90.5s" is not a whole number of seconds; write e.g. "1m31s"`},
			{`"-1m"`, rng + `, got "-1m"`},
			{`"25h"`, rng + `, got "25h"`},
			{`"9999999999h"`, `"9999999999h" is not a duration; write seconds as an integer (` + name + ` = 300) or a duration with a unit ("90s", "5m", "1h30m")`},
			{`1.5`, `expected an integer of seconds or a duration string ("5m"), got float 1.5`},
			{`true`, `expected an integer of seconds or a duration string ("5m"), got boolean true`},
		}
		for _, b := range bad {
			doc := "# a comment\n" + k.table + "\n" + name + " = " + b.v + "\n"
			_, err := Parse("triage.toml", []byte(doc), "/ws")
			want := "triage.toml:3: " + k.key + ": " + b.want
			if err == nil || err.Error() != want {
				t.Errorf("%s %s = %s:\n got  %v\n want %s", k.table, name, b.v, err, want)
			}
		}
	}
}
