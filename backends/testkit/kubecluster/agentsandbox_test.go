//go:build linux

package kubecluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAgentSandboxVersionPinned: the controller the kit looks for is the
// one scripts/agentsandbox.sh builds.
func TestAgentSandboxVersionPinned(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("..", "..", "..", AgentSandboxScript))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "\nversion="+AgentSandboxVersion+"\n") {
		t.Errorf("%s builds another version than AgentSandboxVersion %s", AgentSandboxScript, AgentSandboxVersion)
	}
	if !strings.HasSuffix(AgentSandboxDir(), AgentSandboxVersion) && os.Getenv("TRIAGE_SANDBOX_AGENT_SANDBOX_DIR") == "" {
		t.Errorf("AgentSandboxDir %s is not the version's", AgentSandboxDir())
	}
}
