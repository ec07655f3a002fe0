package probe

// playwrightBrowsers is where Playwright keeps Chromium on macOS, below
// PLAYWRIGHT_BROWSERS_PATH: the Chromium build, Chrome for Testing (newer
// releases, per architecture), the headless shell.
var playwrightBrowsers = []string{
	"chromium*/chrome-mac*/Chromium.app/Contents/MacOS/Chromium",
	"chromium*/chrome-mac*/Google Chrome for Testing.app/Contents/MacOS/Google Chrome for Testing",
	"chromium_headless_shell*/chrome-mac*/headless_shell",
}

// browserApps are the usual installs, found when the config makes them
// readable ([sandbox] read_only).
var browserApps = []string{
	"/Applications/Chromium.app/Contents/MacOS/Chromium",
	"/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
}
