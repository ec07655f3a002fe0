//go:build ignore

// gen writes profile.json, default.json and resolved-<arch>.json: run
// `go generate` on Linux after upgrading github.com/moby/profiles/seccomp.
package main

import (
	"log"
	"os"

	"github.com/triage-sandbox/triage-sandbox/seccompprofile"
)

func main() {
	profile, dockerDefault, err := seccompprofile.Generate()
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("profile.json", append(profile, '\n'), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("default.json", append(dockerDefault, '\n'), 0o644); err != nil {
		log.Fatal(err)
	}
	resolved, err := seccompprofile.GenerateResolved(profile)
	if err != nil {
		log.Fatal(err)
	}
	for arch, b := range resolved {
		if err := os.WriteFile("resolved-"+arch+".json", b, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
