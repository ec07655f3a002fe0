package main

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
)

// TestInitCost keeps a start light: every package a binary links runs its
// initialisers in every start, `version` included, so a package-level
// regular expression, table or registry built there is paid by commands
// that never use it. Not a timing test: it counts the allocations the Go
// runtime reports for each package's initialisation (GODEBUG=inittrace=1),
// which are the same in every run.
func TestInitCost(t *testing.T) {
	cases := []struct {
		name string
		bin  string
		args []string
		// total bounds the allocations of every initialiser together (the
		// CLI's 6,355, 4,400 of them the Docker client's reference and
		// digest expressions; the inside binary's 326 with net/http, 148
		// without).
		total int
		// most bounds named packages instead of perPackage: the
		// dependencies that cannot be made lazy here, at what they cost
		// now, and ours that must stay idle, at what they cost lazily.
		most map[string]int
	}{
		{"cli version", testenv.Binary(t), []string{"version"}, 6600, map[string]int{
			// The Docker client's: both compile their regular expressions
			// at init (about 1 ms for reference). A patched copy needs a
			// go.mod replace, which `go install ...@VERSION` (the Action's
			// install) refuses; upstream's fix is distribution/reference#25.
			// 3,600 here; 3,602 once under CI's load (a collection
			// during its init counts a few more): bounded with room.
			"github.com/distribution/reference":   3650,
			"github.com/opencontainers/go-digest": 841,
			// 4; 15 with its volume-name expression compiled at init.
			"github.com/triage-sandbox/triage-sandbox/backends/docker": 8,
		}},
		{"inside", testenv.InsideBinary(t), nil, 250, nil},
		// The front (what users run as triage-sandbox): 103, most of them
		// net's and net/netip's, which the session fast path dials with.
		{"front version", testenv.FrontBinary(t), []string{"version"}, 150, nil},
	}
	// One package's initialisers above this are a table or expressions to
	// make lazy (sync.OnceValue); the largest not named in most is
	// encoding/gob's (366, linked by the MCP SDK).
	const perPackage = 400
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inits := initTrace(t, c.bin, c.args...)
			// Each binary links dozens of packages with init work (the
			// inside one 50): a trace that short was not read whole.
			if len(inits) < 20 {
				t.Fatalf("inittrace listed %d packages: not the runtime's trace", len(inits))
			}
			total := 0
			for pkg, n := range inits {
				total += n
				most, named := c.most[pkg]
				if !named {
					most = perPackage
				}
				if n > most {
					t.Errorf("%s allocates %d times at init (at most %d): build its state on first use", pkg, n, most)
				}
			}
			if total > c.total {
				t.Errorf("initialisation allocates %d times in all (at most %d)", total, c.total)
			}
			for pkg := range c.most {
				if _, ok := inits[pkg]; !ok {
					t.Errorf("%s is not in the trace: the binary no longer links it, take it off the list", pkg)
				}
			}
		})
	}
}

// initTrace runs bin with the runtime's init trace and returns each traced
// package's allocations. The exit code is not looked at: the inside
// binary refuses a start without an entry point, after its initialisation.
func initTrace(t *testing.T, bin string, args ...string) map[string]int {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	_ = cmd.Run()
	// init PKG @0.1 ms, 0.02 ms clock, 312 bytes, 7 allocs
	inits := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(stderr.String()))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 11 || f[0] != "init" || f[10] != "allocs" {
			continue
		}
		n, err := strconv.Atoi(f[9])
		if err != nil {
			t.Fatalf("inittrace line %q: %v", sc.Text(), err)
		}
		inits[f[1]] += n
	}
	return inits
}
