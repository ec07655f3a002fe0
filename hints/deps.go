package hints

import (
	"regexp"
	"sync"
)

// A dependency fetch that failed because the sandbox has no network is
// told apart from other network failures: the fix is not the network but
// the dependencies the host already has (README, "Dependencies").
type depFetch struct {
	re   *regexp.Regexp
	hint string
}

const depsSection = "README, section \"Dependencies\""

var depFetches = sync.OnceValue(func() []depFetch {
	return []depFetch{
		{ // go: the module proxy or the checksum database, or GOPROXY=off with a module the cache lacks
			regexp.MustCompile(`dial tcp: lookup (?:proxy|sum)\.golang\.org|module lookup disabled by GOPROXY=off|(?:proxy|sum)\.golang\.org[^\n]*(?:network is unreachable|no such host|i/o timeout)`),
			"go could not fetch a module: the sandbox has no network ([sandbox] network = false), and it reads only the modules the checkout's go.sum names, from the host's module cache (GOPROXY=off); run `go mod download` in the checkout on the host so every one is there (" + depsSection + ")",
		},
		{ // go: go.mod asks for a newer go than the mounted one
			regexp.MustCompile(`go\.mod requires go >= [^\n]*GOTOOLCHAIN=local`),
			"go.mod asks for a newer go than the sandbox's (the host's, GOTOOLCHAIN=local: a toolchain download needs the network); install that go on the host (" + depsSection + ")",
		},
		{ // npm, yarn, pnpm: the registry
			regexp.MustCompile(`(?:ENOTFOUND|EAI_AGAIN|ENETUNREACH)\s+registry\.|registry\.npmjs\.org|registry\.yarnpkg\.com`),
			"the package manager could not reach the npm registry: the sandbox has no network ([sandbox] network = false); install the dependencies on the host (`npm ci` in the checkout): node_modules in the checkout is readable inside (" + depsSection + ")",
		},
		{ // pip
			regexp.MustCompile(`(?i)No matching distribution found for|Could not find a version that satisfies the requirement|pypi\.org/simple|files\.pythonhosted\.org`),
			"pip could not reach the package index: the sandbox has no network ([sandbox] network = false); install the dependencies into a virtualenv on the host and name its interpreter in [project] python: the venv is mounted read-only (" + depsSection + ")",
		},
	}
})

// depFetchHint is the hint for a dependency fetch the output shows ("" for none).
func depFetchHint(output string) string {
	for _, d := range depFetches() {
		if d.re.MatchString(output) {
			return d.hint
		}
	}
	return ""
}
