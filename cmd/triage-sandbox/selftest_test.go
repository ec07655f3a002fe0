package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
)

func TestSelftestCLI(t *testing.T) {
	root := workspace(t, "")
	t.Run("backend unavailable is exit 2", func(t *testing.T) {
		r := runCLI(t, root, []string{"DOCKER_HOST=unix:///nonexistent/docker.sock"}, "selftest")
		if r.code != 2 || !strings.Contains(r.stderr, "cannot reach the Docker daemon") {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("json and junit", func(t *testing.T) {
		testenv.RequireDocker(t)
		junit := filepath.Join(t.TempDir(), "selftest.xml")
		r := runCLI(t, root, nil, "selftest", "--role", "agent", "--json", "--junit", junit)
		var rep struct {
			Passed bool `json:"passed"`
			Roles  []struct {
				Role       string `json:"role"`
				PolicyHash string `json:"policy_hash"`
				Versions   map[string]string
				Checks     []struct {
					ID, Name, Category, Expected, Observed, Evidence, Control string
					OK                                                        bool
				} `json:"checks"`
			} `json:"roles"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, r.stdout)
		}
		if r.code != 0 || !rep.Passed || len(rep.Roles) != 1 || len(rep.Roles[0].Checks) < 30 {
			var bad []string
			for _, role := range rep.Roles {
				for _, c := range role.Checks {
					if !c.OK {
						bad = append(bad, fmt.Sprintf("%s observed %q: %s (control: %s)", c.ID, c.Observed, c.Evidence, c.Control))
					}
				}
			}
			t.Fatalf("exit %d passed %v: %s\nchecks not ok:\n%s", r.code, rep.Passed, r.stderr, strings.Join(bad, "\n"))
		}
		for _, c := range rep.Roles[0].Checks {
			if c.Expected == "blocked" && c.Control == "" {
				t.Errorf("%s has no control evidence", c.ID)
			}
		}
		if rep.Roles[0].Versions["engine"] == "" || !strings.HasPrefix(rep.Roles[0].PolicyHash, "sha256:") {
			t.Errorf("versions/hash missing: %+v", rep.Roles[0].Versions)
		}
		b, err := os.ReadFile(junit)
		if err != nil {
			t.Fatal(err)
		}
		var suites struct {
			Suites []struct {
				Tests    int `xml:"tests,attr"`
				Failures int `xml:"failures,attr"`
			} `xml:"testsuite"`
		}
		if err := xml.Unmarshal(b, &suites); err != nil || len(suites.Suites) != 1 || suites.Suites[0].Tests < 30 || suites.Suites[0].Failures != 0 {
			t.Fatalf("junit: %v %+v", err, suites)
		}
	})
}
