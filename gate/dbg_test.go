package gate

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestDebug(t *testing.T) {
	g, err := New(Config{Workspace: "/ws", Writable: []string{"/ws/repros"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(os.Getenv("CMDS"), "\n") {
		if line == "" {
			continue
		}
		d := g.CheckShell(line)
		fmt.Printf("%-45q %-8s %-18s %s | %q\n", line, d.Verdict, d.Rule, d.Reason, d.Command)
	}
}
