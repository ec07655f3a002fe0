package selftest

import "slices"

// reproFile is the file the "write a reproducer" control writes and the host
// reads back.
const reproFile = "selftest-repro.py"

// controlChecks are the C-xx checks: things a reproducer must be able to do.
// A sandbox that blocks everything fails them.
func controlChecks() []Check {
	checks := slices.Concat(workspaceControls(), programControls(), resultControls())
	for i := range checks {
		checks[i].Expect = Allowed
	}
	return checks
}

// shmDirs is POSIX shared memory's directory, which Chromium needs: Linux's
// /dev/shm. macOS keeps shared memory out of the file system.
func shmDirs() []string {
	if hostOS == "darwin" {
		return nil
	}
	return []string{"/dev/shm"}
}

// noBrowserHint says where C-06 looks for Chromium and how to provide it.
func noBrowserHint() string {
	if hostOS == "darwin" {
		return "no Chromium readable in the sandbox: install one (npx playwright install chromium) and pass " +
			"PLAYWRIGHT_BROWSERS_PATH, or add the browser's .app to [sandbox] read_only"
	}
	return "no Chromium in the image: build it with `triage-sandbox image build` (Chromium is in by default)"
}

// The main run ends with this code and stderr line (C-10).
const (
	statusExitCode = 3
	statusMarker   = "triage-selftest-stderr-marker"
)
