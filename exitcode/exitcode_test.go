package exitcode

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestREADME: the codes are the README's contract, row for row.
func TestREADME(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, row := range []string{
		fmt.Sprintf("| %d | killed at its timeout", Timeout),
		fmt.Sprintf("| %d | triage-sandbox refused or failed before the command ran", Refused),
		fmt.Sprintf("| %d | the command exists but cannot be executed", NotExecutable),
		fmt.Sprintf("| %d | the command was not found in the sandbox", NotFound),
		fmt.Sprintf("| %d+N | killed by signal N (%d also covers out-of-memory", SignalBase, Killed),
		fmt.Sprintf("`selftest`: %d every check passed; %d a check failed or was inconclusive; %d the backend cannot",
			SelftestPassed, SelftestFailed, SelftestUnavailable),
		fmt.Sprintf("%d denied, %d a confirm rule would ask, %d usage error", CheckDenied, CheckConfirm, Refused),
	} {
		if !strings.Contains(readme, row) {
			t.Errorf("README.md does not say %q", row)
		}
	}
	if Signaled(9) != Killed || Signaled(2) != Interrupted {
		t.Errorf("Signaled(9) = %d, Signaled(2) = %d; want %d and %d", Signaled(9), Signaled(2), Killed, Interrupted)
	}
}
