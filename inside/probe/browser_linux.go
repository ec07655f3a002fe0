package probe

import "path/filepath"

// playwrightBrowsers is where Playwright keeps Chromium on Linux, below
// PLAYWRIGHT_BROWSERS_PATH.
var playwrightBrowsers = []string{filepath.Join("chromium*", "chrome-linux", "chrome")}

// browserApps: on Linux a browser is on PATH or Playwright's.
var browserApps []string
