package selftest

import (
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/inside/probe"
)

// TestControlSurvivorIsNotTheSandboxs: PROC-02's control spawns its
// detached child under a token of its own, which the sandbox run's scan
// (a substring match over argv) never matches: a control child its own
// scan missed under load was once taken for the sandbox's survivor (CI:
// PROC-02 "still running after the run" naming the host's binary).
func TestControlSurvivorIsNotTheSandboxs(t *testing.T) {
	e := &Env{C: &Canaries{Token: "tok123"}}
	var sandboxStep probe.Step
	for _, ch := range Catalogue() {
		if ch.ID == "PROC-02" {
			sandboxStep = ch.Steps(e)[0]
		}
	}
	if sandboxStep.Args["token"] != survivorToken(e, false) {
		t.Fatalf("PROC-02 spawns %q, the sandbox run scans for %q", sandboxStep.Args["token"], survivorToken(e, false))
	}
	control := hostStep(sandboxStep)
	if control.Args["token"] != survivorToken(e, true) {
		t.Errorf("the control spawns %q, its scan looks for %q", control.Args["token"], survivorToken(e, true))
	}
	if strings.Contains(control.Args["token"], survivorToken(e, false)) || strings.Contains(survivorToken(e, false), control.Args["token"]) {
		t.Errorf("the control's token %q and the sandbox's %q match each other's scan", control.Args["token"], survivorToken(e, false))
	}
	if sandboxStep.Args["token"] != survivorToken(e, false) {
		t.Error("hostStep changed the sandbox's step")
	}
}
