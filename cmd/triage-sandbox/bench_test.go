package main

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
)

// BenchmarkRunOutputFlood runs a command that prints 1 GiB through
// `run --json` and reports triage-sandbox's peak RSS (target < 64 MiB) and
// the pass-through throughput.
//
//	go test -run '^$' -bench RunOutputFlood -benchtime 1x ./cmd/triage-sandbox/
func BenchmarkRunOutputFlood(b *testing.B) {
	testenv.RequireDocker(b)
	root := workspace(b, "")
	const size = 1 << 30
	var worstRSS int64
	var total time.Duration
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(testenv.Binary(b), "run", "--json", "--", "head", "-c", "1073741824", "/dev/zero")
		cmd.Dir = root
		start := time.Now()
		out, err := cmd.Output()
		total += time.Since(start)
		if err != nil {
			b.Fatalf("run: %v %s", err, out)
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			worstRSS = max(worstRSS, ru.Maxrss) // KiB on Linux
		}
	}
	b.ReportMetric(float64(worstRSS)/1024, "peak-RSS-MiB")
	b.ReportMetric(float64(size)*float64(b.N)/total.Seconds()/1e6, "MB/s")
	if worstRSS > 64<<10 {
		b.Errorf("peak RSS %d MiB, target < 64 MiB", worstRSS>>10)
	}
}
