package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is this project's module path.
const module = "github.com/triage-sandbox/triage-sandbox"

// allowedOwn is every package of this module the inside binary may link:
// the sandbox side (one tree, inside/) and the side-neutral packages both
// sides speak (the protocol, the staged copy's format, exit codes, the
// seccomp profile's tables, host-safe file access, the owner record). A
// package that comes by a new import fails here until it is added with a
// reason: the binary's point is a cheap start and a small surface.
var allowedOwn = []string{
	"inside", // the sandbox side: holder, supervisor, probes, local helper, confinement, seccomp filter
	"cmd/triage-sandbox-inside",
	"protocol",       // every message between our processes
	"stage",          // the staged copy's stream format: Unpack and Export are its sandbox ends
	"exitcode",       // the exit codes both sides agree on
	"seccompprofile", // the syscall tables the filter is built from
	"hostfs",         // descriptor-relative file access (export, quarantine)
	"ownership",      // the owner record a holder's lifeline checks
	"internal/cgroupfs",
	"internal/phase",
	"internal/fdclean",
}

// allowedModules is every other module the binary may link. The standard
// library is allowed but for what TestLinksNoCLI's heavy list names.
var allowedModules = []string{
	"golang.org/x/sys",
	"golang.org/x/net/bpf",
	"kernel.org/pub/linux/libs/security/libcap/psx",
	"github.com/landlock-lsm/go-landlock",
	"github.com/opencontainers/runtime-spec",
	"github.com/moby/profiles/seccomp",
}

// heavyStd is what the standard library would bring at a cost: the probes
// serve and fetch their loopback page by hand (inside/probe, page.go), as
// net/http would bring TLS, x509 and http2; gob initialises type tables.
var heavyStd = []string{"net/http", "crypto/tls", "crypto/x509", "encoding/gob"}

func under(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }

// TestLinksOnlyAllowed: what go list says the binary is built from is
// checked against the allowed lists; the positive check keeps the test from
// passing on an empty list.
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
			t.Errorf("cmd/triage-sandbox-inside links %s: %s", pkg, problem)
		}
	}
	for _, want := range []string{module + "/inside", module + "/inside/localhelper", module + "/inside/probe"} {
		if !slices.Contains(deps, want) {
			t.Errorf("go list -deps does not list %s: the list is not the binary's", want)
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
		if slices.ContainsFunc(allowedOwn, func(a string) bool { return under(rel, a) }) {
			return ""
		}
		return "not in allowedOwn: the sandbox side lives under inside/; add a side-neutral package with its reason"
	}
	if slices.ContainsFunc(allowedModules, func(a string) bool { return under(pkg, a) }) {
		return ""
	}
	return "not in allowedModules"
}

// TestGuardRefuses: the guard fails on what the CLI links.
func TestGuardRefuses(t *testing.T) {
	for _, pkg := range []struct {
		path string
		std  bool
	}{
		{module + "/policy", false}, {module + "/backends/docker", false}, {module + "/gate", false},
		{"github.com/moby/moby/client", false}, {"github.com/spf13/cobra", false},
		{"github.com/distribution/reference", false}, {"go.opentelemetry.io/otel", false},
		{"net/http", true}, {"encoding/gob", true}, {module + "/insidex", false},
	} {
		if linkProblem(pkg.path, pkg.std) == "" {
			t.Errorf("the guard lets the inside binary link %s", pkg.path)
		}
	}
	if p := linkProblem(module+"/inside/probe", false); p != "" {
		t.Errorf("the guard refuses the sandbox side: %s", p)
	}
}
