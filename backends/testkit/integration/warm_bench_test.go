//go:build linux

package integration_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

// The warm paths through the library (no CLI process per command), one
// sub-benchmark per backend; scripts/bench-warm.sh compares the CLI with
// `docker exec` and with cold runs.
//
//	go test -run '^$' -bench Warm ./backends/integration/
func BenchmarkWarmSessionCommand(b *testing.B) {
	for _, name := range backendNames {
		b.Run(name, func(b *testing.B) {
			k := newKit(b, name)
			f := newFixture(b)
			p := k.build(b, f, "agent", currentHost(b))
			p.Warm = policy.Warm{Session: "bench", Idle: time.Minute}
			wb := k.warm(b)
			runOnce(b, wb, p) // start the session
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				runOnce(b, wb, p)
			}
		})
	}
}

func BenchmarkWarmPooledReproducer(b *testing.B) {
	for _, name := range backendNames {
		b.Run(name, func(b *testing.B) {
			k := newKit(b, name)
			f := newFixture(b)
			p := k.build(b, f, "reproducer", currentHost(b))
			p.Warm = policy.Warm{Pool: 2, Idle: time.Minute}
			wb := k.warm(b)
			runOnce(b, wb, p) // start the pool
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				runOnce(b, wb, p)
				b.StopTimer()
				time.Sleep(300 * time.Millisecond) // refilled off the caller's path, as between real runs
				b.StartTimer()
			}
		})
	}
}

// BenchmarkDockerExec is the reference: `docker exec` into a running
// container with the same hardening.
func BenchmarkDockerExec(b *testing.B) {
	newKit(b, "docker") // skips without a daemon
	out, err := exec.Command("docker", "run", "-d", "--rm", "--network", "none", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "--read-only", "--init", "--user", "65534:65534",
		"triage-sandbox:latest", "sleep", "600").Output()
	if err != nil {
		b.Fatal(err)
	}
	id := string(out[:len(out)-1])
	b.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", id).Run() })
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := exec.Command("docker", "exec", id, "true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func runOnce(b *testing.B, bk backends.Backend, p *policy.Policy) {
	b.Helper()
	res, err := sandbox.Run(context.Background(), bk, sandbox.Request{Policy: p, NoAudit: true,
		Command: backends.Command{Argv: []string{"true"}}})
	if err != nil || res.ExitCode != 0 {
		b.Fatalf("run: %+v %v", res.Result, err)
	}
}
