//go:build linux

package probe

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLanesRunBeside: the main lane runs first with nothing beside it,
// then the other lanes beside one another (each waits for a file the other
// makes: one after the other they would wait out the exec op's 20 s), each
// lane's steps in order; every observation is written whole, and the
// marker and exit code come once every lane ended.
func TestLanesRunBeside(t *testing.T) {
	dir := t.TempDir()
	sh := func(id, lane, script string) Step {
		return Step{ID: id, Op: "exec", List: []string{"sh", "-c", script}, Lane: lane, Args: map[string]string{"dir": dir}}
	}
	await := func(f string) string { return "while [ ! -e " + f + " ]; do sleep 0.01; done; echo " + f }
	plan := Plan{Steps: []Step{
		sh("a-1", "a", "test -e main && touch a"),
		sh("main-1", "", "sleep 0.2"),
		sh("a-2", "a", await("b")),
		sh("b-1", "b", "test -e main && touch b"),
		sh("b-2", "b", await("a")),
		sh("main-2", "", "touch main"),
	}, ExitCode: 7, StderrMarker: "marker"}
	var out, errOut bytes.Buffer
	code := Execute(plan, "", &out, &errOut)
	if code != 7 || strings.TrimSpace(errOut.String()) != "marker" {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	obs, err := ParseObservations(&out)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"main-1", "main-2", "a-1", "a-2", "b-1", "b-2"} {
		if !obs[id].OK {
			t.Errorf("%s: %+v", id, obs[id])
		}
	}
	if obs["a-2"].Detail != "b" || obs["b-2"].Detail != "a" {
		t.Errorf("a-2 = %+v, b-2 = %+v", obs["a-2"], obs["b-2"])
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	pos := map[string]int{}
	for i, l := range lines {
		for _, id := range []string{"a-1", "a-2", "main-1", "main-2"} {
			if strings.Contains(l, `"id":"`+id+`"`) {
				pos[id] = i
			}
		}
	}
	if pos["a-1"] > pos["a-2"] || pos["main-1"] > pos["main-2"] || pos["main-2"] > pos["a-1"] {
		t.Errorf("steps out of order: %q", lines)
	}
}

// TestForkBombReapsOnlyItsOwn: a child another lane started and has not
// yet waited for stays that lane's to wait for.
func TestForkBombReapsOnlyItsOwn(t *testing.T) {
	other := exec.Command("true")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	// Until it is a zombie: then a wait for any child would take it first.
	stat := "/proc/" + strconv.Itoa(other.Process.Pid) + "/stat"
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if b, err := os.ReadFile(stat); err == nil && strings.Contains(string(b), ") Z ") {
			break
		}
	}
	if o := opForkBomb(Step{Args: map[string]string{"cap": "5"}}, ""); !o.OK {
		t.Fatalf("fork bomb: %+v", o)
	}
	if err := other.Wait(); err != nil {
		t.Errorf("the other lane's child was reaped by the fork bomb: %v", err)
	}
}
