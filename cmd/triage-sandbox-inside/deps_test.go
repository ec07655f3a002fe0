package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLinksNoCLI: the binary's point is a cheap start, so it must not link
// what makes the CLI's start dear (their package initialisation). The list
// is of what go list says the binary is built from; the positive check
// keeps the test from passing on an empty list.
func TestLinksNoCLI(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	forbidden := []string{
		"github.com/moby/moby/client",
		"github.com/modelcontextprotocol/go-sdk",
		"github.com/spf13/cobra",
		"github.com/triage-sandbox/triage-sandbox/backends/docker",
		"github.com/triage-sandbox/triage-sandbox/policy",
		"github.com/triage-sandbox/triage-sandbox/config",
		"github.com/triage-sandbox/triage-sandbox/gate",
		// What the Docker client, the MCP SDK and the config bring and
		// initialise at every start (their regular expressions, tracing,
		// schema and gob type tables), in case one comes by another path.
		"github.com/distribution/reference",
		"github.com/opencontainers/go-digest",
		"go.opentelemetry.io",
		"github.com/google/jsonschema-go",
		"encoding/gob",
		"github.com/BurntSushi/toml",
		"mvdan.cc/sh",
		// The probes serve and fetch their loopback page by hand (package
		// probe, page.go): net/http would bring TLS, x509 and http2.
		"net/http",
		"crypto/tls",
		"crypto/x509",
	}
	for _, d := range deps {
		for _, f := range forbidden {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("cmd/triage-sandbox-inside links %s", d)
			}
		}
	}
	for _, want := range []string{"github.com/triage-sandbox/triage-sandbox/inside", "github.com/triage-sandbox/triage-sandbox/backends/local/helper"} {
		if !slices.Contains(deps, want) {
			t.Errorf("go list -deps does not list %s: the list is not the binary's", want)
		}
	}
}
