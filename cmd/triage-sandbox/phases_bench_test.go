package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/internal/phase"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// BenchmarkPhases traces `run -- true` per backend, cold, in a session and
// as a pooled reproducer, and prints where each millisecond went: the CLI's own start-up (exec to
// main), every phase the CLI and the session's keeper trace
// (TRIAGE_SANDBOX_TRACE), and the whole run as seen from outside. Each
// figure is the median over the runs (-benchtime Nx; 5x is plenty).
//
//	go test -run '^$' -bench Phases -benchtime 5x ./cmd/triage-sandbox/
func BenchmarkPhases(b *testing.B) {
	testenv.SkipShort(b, "runs sandboxes")
	for _, backend := range []string{"docker", "oci", "local"} {
		for _, mode := range []string{"cold", "session", "pool"} {
			b.Run(backend+"/"+mode, func(b *testing.B) {
				requireBackend(b, backend)
				benchPhases(b, backend, mode)
			})
		}
	}
}

// requireBackend skips where backend cannot run here, saying why.
func requireBackend(t testing.TB, backend string) {
	switch backend {
	case "docker":
		testenv.RequireDocker(t)
	case "oci":
		testenv.RequireRoot(t, "the oci backend runs runc")
		if _, err := exec.LookPath("runc"); err != nil {
			t.Skip("the oci backend needs runc")
		}
		testenv.RequireDocker(t) // the image comes from the daemon
	}
}

func benchPhases(b *testing.B, backend, mode string) {
	body := ""
	if mode == "pool" {
		body = "[sandbox.reproducer]\npool = 2\n"
	}
	root := workspace(b, body)
	tracePath := filepath.Join(b.TempDir(), "trace.jsonl")
	args := []string{"run", "--backend", backend}
	switch mode {
	case "pool":
		args = append(args, "--role", "reproducer")
		defer func() {
			end := exec.Command(testenv.Binary(b), "session", "end", "pool:reproducer")
			end.Dir = root
			end.Env = append(os.Environ(), "TRIAGE_SANDBOX="+backend)
			if out, err := end.CombinedOutput(); err != nil {
				b.Errorf("ending the pool: %v %s", err, out)
			}
		}()
		// The first run starts the keeper and its pool: not counted.
		tracedRun(b, root, tracePath, append(args, "--", "true"))
	case "session":
		name := "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		args = append(args, "--session", name)
		defer func() {
			end := exec.Command(testenv.Binary(b), "session", "end", name)
			end.Dir = root
			end.Env = append(os.Environ(), "TRIAGE_SANDBOX="+backend)
			if out, err := end.CombinedOutput(); err != nil {
				b.Errorf("ending session %s: %v %s", name, err, out)
			}
		}()
		// The first command starts the keeper (which traces into the same
		// file from then on) and its sandbox: not counted.
		tracedRun(b, root, tracePath, append(args, "--", "true"))
	}
	args = append(args, "--", "true")
	var runs []map[string]float64
	for i := 0; i < b.N; i++ {
		if mode == "pool" {
			// The pool refills off the runs' path, as between an agent's
			// commands; a run that found it empty would time a start.
			time.Sleep(time.Second)
		}
		// Only the lines this run adds: a keeper keeps appending.
		from := fileSize(tracePath)
		begun, walled := tracedRun(b, root, tracePath, args)
		runs = append(runs, phaseTable(b, tracePath, from, begun, walled))
	}
	b.StopTimer()
	printPhases(b, runs)
}

// tracedRun runs the binary once (tracing into trace unless it is "") and
// returns when it was started and how long it took, from outside.
func tracedRun(b *testing.B, dir, trace string, args []string) (time.Time, time.Duration) {
	cmd := exec.Command(testenv.Binary(b), args...)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	if trace != "" {
		cmd.Env = append(cmd.Env, phase.EnvVar+"="+trace)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	begun := time.Now()
	err := cmd.Run()
	walled := time.Since(begun)
	if err != nil {
		if strings.Contains(stderr.String(), "cannot run here") || strings.Contains(stderr.String(), "not available") {
			b.Skipf("backend unavailable: %s", stderr.String())
		}
		b.Fatalf("%v: %v\n%s", args, err, stderr.String())
	}
	return begun, walled
}

// phaseTable reads one run's trace: each phase's length in ms, with the
// CLI's start-up (exec to main) and the whole run added.
func phaseTable(b *testing.B, path string, from int64, begun time.Time, walled time.Duration) map[string]float64 {
	f, err := os.Open(path)
	if err != nil {
		// testenv.BinaryCache is shared by every checkout of this uid: a
		// test run of an older tree may have replaced the binary.
		b.Fatalf("no trace (%v): does %s come from this tree? (run with a TMPDIR of its own)", err, testenv.Binary(b))
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		b.Fatal(err)
	}
	t := map[string]float64{"total (outside)": ms(walled)}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e phase.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			b.Fatalf("trace line %q: %v", sc.Text(), err)
		}
		if e.Proc == "cli" && e.Phase == "main" {
			t["cli start-up (exec to main)"] = ms(time.Duration(e.OriginUnixNS-begun.UnixNano())) + e.StartMS
			continue
		}
		t[e.Proc+": "+e.Phase] += e.DurMS
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	if cli, ok := t["cli: cli"]; ok {
		t["cli exit (after its last phase)"] = t["total (outside)"] - t["cli start-up (exec to main)"] - cli
	}
	return t
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// printPhases logs the median of each phase over runs, in the order of
// the first run's trace file (the order phases ended).
func printPhases(b *testing.B, runs []map[string]float64) {
	names := map[string]bool{}
	for _, r := range runs {
		for n := range r {
			names[n] = true
		}
	}
	order := slices.Sorted(func(yield func(string) bool) {
		for n := range names {
			if !yield(n) {
				return
			}
		}
	})
	// Printed, not logged: a benchmark's log is cut at ten lines.
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: median of %d runs, ms (phases nest: exec holds exec.*, cli holds the rest)\n", b.Name(), len(runs))
	for _, n := range order {
		var vs []float64
		for _, r := range runs {
			if v, ok := r[n]; ok {
				vs = append(vs, v)
			}
		}
		fmt.Fprintf(&sb, "  %-36s %8.1f\n", n, median(vs))
	}
	fmt.Print(sb.String())
	all := make([]float64, len(runs))
	for i, r := range runs {
		all[i] = r["total (outside)"]
	}
	b.ReportMetric(median(all), "ms/run")
	b.ReportMetric(0, "ns/op") // the runs' own figures are above
}

func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkStartup times the binary's own start-up, paired with /bin/true
// run the same way: `version`, and each entry point given a spec it
// refuses (it starts, decodes, exits 125: nothing runs). It prints the
// median of each and its ratio to /bin/true.
//
//	go test -run '^$' -bench Startup -benchtime 20x ./cmd/triage-sandbox/
func BenchmarkStartup(b *testing.B) {
	testenv.SkipShort(b, "builds the binary")
	bin := testenv.Binary(b)
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true(1) to compare with")
	}
	cases := [][]string{{"version"}}
	for _, e := range protocol.Entries() {
		if e != protocol.EntryProbeChild { // takes a probe's own arguments
			cases = append(cases, []string{string(e), "not-a-spec"})
		}
	}
	for _, args := range cases {
		b.Run(args[0], func(b *testing.B) {
			want := 0
			if len(args) > 1 {
				want = 125
			}
			var ours, base []float64
			for i := 0; i < b.N; i++ {
				ours = append(ours, timeRun(b, want, bin, args...))
				base = append(base, timeRun(b, 0, truePath))
			}
			b.StopTimer()
			ratios := make([]float64, len(ours))
			for i := range ours {
				ratios[i] = ours[i] / base[i]
			}
			b.Logf("%s: %.1f ms, true(1) %.1f ms, ratio %.2f (medians of %d pairs)",
				args[0], median(ours), median(base), median(ratios), len(ours))
			b.ReportMetric(median(ours), "ms/start")
			b.ReportMetric(median(ratios), "x-true")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// timeRun runs argv once and returns its wall time in ms; it must exit want.
func timeRun(b *testing.B, want int, argv0 string, args ...string) float64 {
	cmd := exec.Command(argv0, args...)
	begun := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(begun)
	if code := cmd.ProcessState.ExitCode(); code != want {
		b.Fatalf("%s %v: exit %d (%v), want %d: %s", argv0, args, code, err, want, out)
	}
	return ms(d)
}
