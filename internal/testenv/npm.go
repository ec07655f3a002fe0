package testenv

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var npmMu sync.Mutex

// NPMPackage installs name@version from the npm registry (once; it stays
// in NPMCache between runs, as Binary's binary does) and returns the
// directory whose node_modules holds it. A test that needs it is in the
// full tier; without node and npm it skips, unless CI is set.
func NPMPackage(t testing.TB, name, version string) string {
	t.Helper()
	SkipShort(t, "installs "+name+" from the npm registry")
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s is required: %v", tool, err)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
	npmMu.Lock()
	defer npmMu.Unlock()
	dir := filepath.Join(NPMCache(), strings.NewReplacer("@", "", "/", "+").Replace(name)+"@"+version)
	if installedVersion(dir, name) == version {
		return dir
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--no-save", "--prefix", dir, name+"@"+version)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install %s@%s: %v\n%s", name, version, err, out)
	}
	if got := installedVersion(dir, name); got != version {
		t.Fatalf("npm installed %s %q, want %s", name, got, version)
	}
	return dir
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
