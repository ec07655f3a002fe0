package testenv

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// NPMPackage returns the directory whose node_modules holds name@version,
// as scripts/test.sh installed it from the npm registry (tests themselves
// never dial a public address). A test that needs it is in the full tier;
// without it the test fails under CI and skips elsewhere, saying how to
// install it.
func NPMPackage(t testing.TB, name, version string) string {
	t.Helper()
	SkipShort(t, "needs "+name+" from the npm registry")
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is required: %v", tool, err)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
	dir := NPMDir(name, version)
	if got := installedVersion(dir, name); got != version {
		msg := fmt.Sprintf("%s@%s is not installed in %s (found %q): scripts/test.sh installs it (npm install --prefix %s %s@%s)",
			name, version, dir, got, dir, name, version)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

// NPMDir is where name@version is installed for the tests.
func NPMDir(name, version string) string {
	return filepath.Join(NPMCache(), strings.NewReplacer("@", "", "/", "+").Replace(name)+"@"+version)
}

// NPMCache is where NPMPackage keeps what it installed.
func NPMCache() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("triage-sandbox-test-npm-%d", os.Geteuid()))
}

func installedVersion(dir, name string) string {
	raw, err := os.ReadFile(filepath.Join(dir, "node_modules", name, "package.json"))
	if err != nil {
		return ""
	}
	var pkg struct {
		Version string `json:"version"`
	}
	_ = json.Unmarshal(raw, &pkg)
	return pkg.Version
}
