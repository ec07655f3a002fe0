package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is this project's module path.
const module = "github.com/triage-sandbox/triage-sandbox"

// allowedOwn is every package of this module the front may link (each
// exactly, not its subpackages), each
// with its reason. The front's point is a start no heavier than an empty
// Go program's: a package that comes by a new import fails here until it
// is added with a reason (and its init cost measured: TestInitCost).
var allowedOwn = []string{
	"cmd/triage-sandbox-front",
	"exitcode",              // 125 when the CLI cannot be started
	"internal/buildversion", // `version`, the very line the CLI prints
	"warm/fastpath",         // `run --session` and a pooled `run` through their keeper
	"protocol",              // its messages' version and strict decoding
	"hostfs",                // protocol's (descriptor-relative file access), as in the inside binary
	"stage",                 // protocol's (the staged copy's format), as in the inside binary
}

// allowedModules is every other module the front may link (hostfs's).
// The standard library is allowed but for heavyStd.
var allowedModules = []string{"golang.org/x/sys"}

// heavyStd is what the standard library would bring at a cost at start
// (TLS and x509 tables, gob's type registry, net/http's init) or in size.
var heavyStd = []string{"net/http", "crypto/tls", "crypto/x509", "encoding/gob", "text/template", "html/template", "regexp"}

func under(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }

// TestLinksOnlyAllowed: what go list says the front is built from is
// checked against the allowed lists; the positive check keeps the test
// from passing on an empty list.
func TestLinksOnlyAllowed(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{.Standard}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var deps []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, std, _ := strings.Cut(line, " ")
		deps = append(deps, pkg)
		if problem := linkProblem(pkg, std == "true"); problem != "" {
			t.Errorf("cmd/triage-sandbox-front links %s: %s", pkg, problem)
		}
	}
	for _, want := range []string{module + "/internal/buildversion", module + "/warm/fastpath", "syscall"} {
		if !slices.Contains(deps, want) {
			t.Errorf("go list -deps does not list %s: the list is not the front's", want)
		}
	}
}

// linkProblem says why pkg may not be linked, or "" when it may.
func linkProblem(pkg string, std bool) string {
	if std {
		if slices.ContainsFunc(heavyStd, func(h string) bool { return under(pkg, h) }) {
			return "a heavy standard package (see heavyStd)"
		}
		return ""
	}
	if rel, ok := strings.CutPrefix(pkg, module+"/"); ok {
		// Exactly these packages: protocol's subpackages (the keeper's
		// messages, with the policy) are not protocol.
		if slices.Contains(allowedOwn, rel) {
			return ""
		}
		return "not in allowedOwn: the front links only what version and the session fast path need; the rest is the CLI's (hand the command over)"
	}
	if slices.ContainsFunc(allowedModules, func(a string) bool { return under(pkg, a) }) {
		return ""
	}
	return "not in allowedModules: the front links no third-party module"
}

// TestGuardRefuses: the guard fails on what the CLI links.
func TestGuardRefuses(t *testing.T) {
	for _, pkg := range []struct {
		path string
		std  bool
	}{
		{module + "/policy", false}, {module + "/backends/docker", false}, {module + "/gate", false},
		{module + "/config", false}, {module + "/cmd/triage-sandbox", false}, {module + "/warm", false},
		{module + "/protocol/keeper", false}, {module + "/sandbox", false},
		{"github.com/moby/moby/client", false}, {"github.com/spf13/cobra", false},
		{"github.com/distribution/reference", false}, {"go.opentelemetry.io/otel", false},
		{"github.com/BurntSushi/toml", false}, {"github.com/modelcontextprotocol/go-sdk/mcp", false},
		{"net/http", true}, {"encoding/gob", true}, {"regexp", true}, {module + "/exitcodex", false},
	} {
		if linkProblem(pkg.path, pkg.std) == "" {
			t.Errorf("the guard lets the front link %s", pkg.path)
		}
	}
	if p := linkProblem(module+"/internal/buildversion", false); p != "" {
		t.Errorf("the guard refuses the version: %s", p)
	}
}
