//go:build linux || darwin

package probe

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// browserNames are where Debian, other distributions and Playwright put a
// Chromium the image may carry.
var browserNames = []string{"chromium", "chromium-browser", "google-chrome", "headless_shell", "chrome"}

// findBrowser looks on PATH, then under PLAYWRIGHT_BROWSERS_PATH, then at
// this OS's fixed locations (playwrightBrowsers, browserApps).
func findBrowser() string {
	for _, n := range browserNames {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	if dir := os.Getenv("PLAYWRIGHT_BROWSERS_PATH"); dir != "" {
		for _, pattern := range playwrightBrowsers {
			matches, _ := filepath.Glob(filepath.Join(dir, pattern))
			if len(matches) > 0 {
				return matches[0]
			}
		}
	}
	for _, p := range browserApps {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// opBrowser serves a page on loopback and loads it in headless Chromium, the
// way browser reproducers do. Chromium's own sandbox is off (--no-sandbox):
// the outer sandbox is the boundary, and its seccomp profile and dropped
// capabilities would not let Chromium build one anyway.
func opBrowser(s Step, _ string) Observation {
	bin := findBrowser()
	if bin == "" {
		return Observation{Errno: "ENOENT", Detail: "no Chromium in the image", Values: map[string]string{"missing": "true"}}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Observation{Errno: errnoName(err), Detail: "listen"}
	}
	marker := "triage-selftest-browser-page"
	go servePage(ln, "text/html", "<html><body><p id=m></p><script>document.getElementById('m').textContent='"+marker+"'</script></body></html>", 5*time.Second)
	defer ln.Close()

	profile, err := os.MkdirTemp("", "selftest-chromium-")
	if err != nil {
		return Observation{Errno: errnoName(err), Detail: "profile dir"}
	}
	defer os.RemoveAll(profile)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--no-default-browser-check", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--disable-quic", "--user-data-dir="+profile,
		"--dump-dom", "http://"+ln.Addr().String()+"/")
	out, err := cmd.Output()
	if !strings.Contains(string(out), marker) {
		detail := "page script did not run"
		if err != nil {
			detail = err.Error()
			if ee, ok := err.(*exec.ExitError); ok && len(ee.Stderr) > 0 {
				detail += ": " + failureLine(string(ee.Stderr))
			}
		}
		return Observation{Errno: "EIO", Detail: detail}
	}
	return Observation{OK: true, Detail: filepath.Base(bin) + " rendered the page from " + ln.Addr().String()}
}

// failureLine is the last line Chromium printed that is not its D-Bus
// client failing (the sandbox has no bus; those lines come last and say
// nothing about why it failed), or the last line when all are.
func failureLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if !strings.Contains(lines[i], "dbus/bus.cc") && !strings.Contains(lines[i], "dbus/object_proxy.cc") {
			return lines[i]
		}
	}
	return lines[len(lines)-1]
}
