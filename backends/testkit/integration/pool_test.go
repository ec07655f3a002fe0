//go:build linux

package integration_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends/docker"
	"github.com/triage-sandbox/triage-sandbox/backends/local"
	"github.com/triage-sandbox/triage-sandbox/backends/oci"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/warm"
)

// TestPoolSeesTheHostAtTake: a pooled sandbox sees the writable paths as
// they are when a run takes it, not as they were when the pool was filled
// (issue 22, finding 5: after the host rewrote repros/r.txt and added
// repros/new.txt, the next pooled run printed the old text and no new
// file). End to end through the CLI, as ai-triager runs it; the second run
// must be the pooled sandbox's, or the test would prove nothing.
func TestPoolSeesTheHostAtTake(t *testing.T) {
	forEachBackend(t, func(t *testing.T, k *kit) {
		f := newFixture(t)
		cfg := filepath.Join(f.root, "triage.toml")
		body, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cfg, append(body, "[sandbox.reproducer]\npool = 1\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		repros := filepath.Join(f.root, "repros")
		if err := os.Mkdir(repros, 0o755); err != nil {
			t.Fatal(err)
		}
		write := func(name, text string) {
			t.Helper()
			if err := os.WriteFile(filepath.Join(repros, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("r.txt", "v1\n")
		wb := k.warm(t)
		script := "cat repros/r.txt; cat repros/new.txt 2>/dev/null || echo 'no new.txt'"
		first := cliRun(t, k, f.root, wb.Dir, script)
		if first.Stdout != "v1\nno new.txt\n" {
			t.Fatalf("the first run: %q", first.Stdout)
		}
		pooled := k.waitPooled(t, wb.Dir, first.Sandbox)
		write("r.txt", "v2\n")
		write("new.txt", "new\n")
		// The command also edits r.txt: the copy back compares with what the
		// host held at the take, so the edit is no conflict.
		second := cliRun(t, k, f.root, wb.Dir, script+"; echo v3 > repros/r.txt")
		if second.Sandbox != pooled {
			t.Fatalf("the second run ran in %s, not in the pooled %s", second.Sandbox, pooled)
		}
		if second.Stdout != "v2\nnew\n" {
			t.Errorf("the pooled run saw %q, want the host's v2 and new.txt", second.Stdout)
		}
		if b, _ := os.ReadFile(filepath.Join(repros, "r.txt")); string(b) != "v3\n" {
			t.Errorf("r.txt on the host = %q, want the command's v3", b)
		}
		if b, _ := os.ReadFile(filepath.Join(repros, "new.txt")); string(b) != "new\n" {
			t.Errorf("new.txt on the host = %q", b)
		}
	})
}

// cliResult is what `run --json` says, as far as these tests read it.
type cliResult struct {
	ExitCode int    `json:"exit_code"`
	Sandbox  string `json:"sandbox"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
}

// cliRun runs script as the reproducer through the CLI in workspace ws,
// with the keepers' directory dir.
func cliRun(t *testing.T, k *kit, ws, dir, script string) cliResult {
	t.Helper()
	cmd := exec.Command(testenv.Binary(t), "run", "--json", "--backend", k.name, "--role", "reproducer", "--", "sh", "-c", script)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), warm.DirEnv+"="+dir, "HOME="+ws)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var res cliResult
	if jerr := json.Unmarshal(out, &res); jerr != nil || err != nil || res.ExitCode != 0 {
		t.Fatalf("run %q: %v %v\nstdout: %s\nstderr: %s", script, err, jerr, out, stderr.String())
	}
	return res
}

// waitPooled waits until the one keeper in dir holds a sandbox other than
// used (the pool filled again), and some time more (a fill's start
// includes its staging), and returns its id.
func (k *kit) waitPooled(t *testing.T, dir, used string) string {
	t.Helper()
	recs, err := warm.List(dir)
	if err != nil || len(recs) != 1 || !recs[0].Alive() {
		t.Fatalf("want one live keeper in %s: %+v %v", dir, recs, err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ids := k.sandboxesOf(t, recs[0].PID)
		if len(ids) == 1 && ids[0] != used {
			time.Sleep(2 * time.Second)
			if again := k.sandboxesOf(t, recs[0].PID); !slices.Equal(again, ids) {
				t.Fatalf("the pool changed while it should wait: %v, then %v", ids, again)
			}
			return ids[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool did not fill: the keeper holds %v", ids)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sandboxesOf lists the sandboxes whose ownership record names pid as
// their owner, as each backend records it.
func (k *kit) sandboxesOf(t *testing.T, pid int) []string {
	t.Helper()
	var ids []string
	switch k.name {
	case docker.Name:
		list, err := k.b.(*docker.Backend).Client().ContainerList(context.Background(), client.ContainerListOptions{
			All: true, Filters: make(client.Filters).Add("label", profiles.LabelParentPID+"="+strconv.Itoa(pid)),
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range list.Items {
			ids = append(ids, c.ID)
		}
	case oci.Name, local.Name:
		root := stateRoot(k.name)
		if k.name == oci.Name {
			root = filepath.Join(root, "bundles")
		}
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if rec, err := readLocalOwner(filepath.Join(root, e.Name())); err == nil && rec.PID == pid {
				ids = append(ids, e.Name())
			}
		}
	default:
		t.Fatalf("no ownership records known for backend %q", k.name)
	}
	slices.Sort(ids)
	return ids
}
