package testenv

import (
	"encoding/base64"
	"os"
	"os/exec"
	"testing"
)

// PersistedCheckout makes dir a git repository with one commit and an
// origin on github.com whose job token is persisted the way
// actions/checkout does by default: an http extraheader in .git/config
// carrying "x-access-token:<token>" in base64. Git runs with no system or
// user config of the host's.
func PersistedCheckout(t testing.TB, dir, token string) {
	t.Helper()
	header := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "one"},
		{"remote", "add", "origin", "https://github.com/o/r"},
		{"config", "http.https://github.com/.extraheader", "AUTHORIZATION: basic " + header}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@invalid", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@invalid", "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, b)
		}
	}
}
