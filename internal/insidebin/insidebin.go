// Package insidebin chooses the binary that runs inside sandboxes: the
// small static triage-sandbox-inside (cmd/triage-sandbox-inside), whose
// start costs a fraction of the CLI's, or the CLI's own static binary,
// which runs the same entry points and is always right.
//
// The small binary is used only when it provably comes from the same
// source as the binary it stands in for: the two speak an unversioned
// protocol (package protocol) over argv and descriptors, so a stale or
// foreign one could misread a plan. Provably means the same Go version,
// main module, dependencies that both link, build settings that change
// what is compiled, and a clean VCS revision on both. Anything short of
// that (a dirty tree, a build without VCS stamps, no such file) falls back
// to the CLI's binary and says why. A binary named explicitly by EnvVar
// that is missing, not static or writable by others is refused instead:
// an explicit setting does not silently turn into another binary.
package insidebin

import (
	"debug/buildinfo"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
)

// EnvVar names the small binary explicitly (tests, packagers); unset, it
// is looked for as Name beside the CLI's binary.
const EnvVar = "TRIAGE_SANDBOX_INSIDE"

// Name is the small binary's file name beside the CLI's.
const Name = "triage-sandbox-inside"

// Choice is the binary sandboxes run.
type Choice struct {
	// Path is the binary to run and mount inside sandboxes.
	Path string
	// Separate is true when Path is the small binary.
	Separate bool
	// Why says, when Separate is false, why the small one is not used.
	Why string
}

// Choose picks the binary for self, the resolved static binary of the CLI
// (sandbox.SelfExe), whose build information is selfInfo. getenv reads
// EnvVar. The error is for an explicit EnvVar that cannot be used.
func Choose(self string, selfInfo *debug.BuildInfo, getenv func(string) string) (Choice, error) {
	fallback := func(why string) (Choice, error) { return Choice{Path: self, Why: why}, nil }
	path, explicit := getenv(EnvVar), true
	if path == "" {
		path, explicit = filepath.Join(filepath.Dir(self), Name), false
	}
	resolved, err := usable(path, self)
	if err != nil {
		if explicit {
			return Choice{}, fmt.Errorf("%s=%s: %w; unset it to run %s inside sandboxes, or build it: CGO_ENABLED=0 go build -o %s ./cmd/triage-sandbox-inside", EnvVar, path, err, self, path)
		}
		return fallback(err.Error())
	}
	if selfInfo == nil {
		return fallback(self + " has no build information")
	}
	info, err := buildinfo.ReadFile(resolved)
	if err != nil {
		return fallback(fmt.Sprintf("reading the build information of %s: %v", resolved, err))
	}
	if why := sameSource(selfInfo, info); why != "" {
		return fallback(fmt.Sprintf("%s is not provably built from the same source as %s: %s", resolved, self, why))
	}
	return Choice{Path: resolved, Separate: true}, nil
}

// SelfInfo is the build information of self: this process's own when
// self is this process's executable, else read from the file.
func SelfInfo(self string) (*debug.BuildInfo, error) {
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil && exe == self {
			if info, ok := debug.ReadBuildInfo(); ok {
				return info, nil
			}
		}
	}
	return buildinfo.ReadFile(self)
}

// usable: path resolves to a regular static file that no one but its
// owner, who owns self too (or is root), can change.
func usable(path, self string) (string, error) {
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", fmt.Errorf("no %s: %w", Name, err)
	}
	// Mounted by path into containers: a relative one would name nothing.
	if resolved, err = filepath.Abs(resolved); err != nil {
		return "", err
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", resolved)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return "", fmt.Errorf("%s is writable by group or others (mode %v)", resolved, fi.Mode().Perm())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		sfi, err := os.Stat(self)
		if err != nil {
			return "", err
		}
		if sst, ok := sfi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 && st.Uid != sst.Uid {
			return "", fmt.Errorf("%s belongs to uid %d, %s to uid %d", resolved, st.Uid, self, sst.Uid)
		}
	}
	static, err := Static(resolved)
	if err != nil {
		return "", err
	}
	if !static {
		return "", fmt.Errorf("%s is dynamically linked (it runs inside the image, so build it with CGO_ENABLED=0)", resolved)
	}
	return resolved, nil
}

// settings are the build settings that must agree: what decides the code
// compiled and the revision it came from. vcs.modified is checked apart
// (false on both).
var settings = []string{"CGO_ENABLED", "-tags", "GOOS", "GOARCH", "GOAMD64", "GOARM", "GOARM64", "-ldflags", "vcs", "vcs.revision"}

// sameSource returns "" when a and b provably come from the same source,
// else the first difference found.
func sameSource(a, b *debug.BuildInfo) string {
	if a.GoVersion != b.GoVersion {
		return fmt.Sprintf("Go %s and %s", a.GoVersion, b.GoVersion)
	}
	as, bs := settingMap(a), settingMap(b)
	// A module version with its checksum (go install …@v1.2.3) names its
	// source as surely as a clean revision; a build in a checkout (version
	// (devel), or a pseudo-version without a checksum) needs the latter.
	if !released(a.Main) {
		if as["vcs.revision"] == "" || bs["vcs.revision"] == "" {
			return "no VCS revision stamped (build both in a git checkout with -buildvcs=auto)"
		}
		if as["vcs.revision"] != bs["vcs.revision"] {
			return fmt.Sprintf("vcs.revision %s and %s", as["vcs.revision"], bs["vcs.revision"])
		}
		if as["vcs.modified"] != "false" || bs["vcs.modified"] != "false" {
			return "built from a modified tree (vcs.modified is not false)"
		}
	}
	if a.Main.Path != b.Main.Path || a.Main.Version != b.Main.Version || a.Main.Sum != b.Main.Sum {
		return fmt.Sprintf("main module %s@%s and %s@%s", a.Main.Path, a.Main.Version, b.Main.Path, b.Main.Version)
	}
	for _, k := range settings {
		if as[k] != bs[k] {
			return fmt.Sprintf("build setting %s: %q and %q", k, as[k], bs[k])
		}
	}
	deps := map[string]*debug.Module{}
	for _, d := range a.Deps {
		deps[d.Path] = d
	}
	for _, d := range b.Deps {
		o, ok := deps[d.Path]
		if !ok {
			continue
		}
		if why := sameModule(o, d); why != "" {
			return why
		}
	}
	return ""
}

// released: a module version from a module proxy or tag, with its
// checksum, not the (devel) of a build in a checkout.
func released(m debug.Module) bool {
	return m.Version != "" && m.Version != "(devel)" && m.Sum != ""
}

func sameModule(a, b *debug.Module) string {
	if a.Version != b.Version || a.Sum != b.Sum {
		return fmt.Sprintf("dependency %s@%s and @%s", a.Path, a.Version, b.Version)
	}
	if (a.Replace == nil) != (b.Replace == nil) {
		return fmt.Sprintf("dependency %s replaced in one only", a.Path)
	}
	if a.Replace != nil {
		if a.Replace.Path != b.Replace.Path || a.Replace.Version == "" {
			// A directory replacement has no version to compare.
			return fmt.Sprintf("dependency %s replaced by %s and %s", a.Path, a.Replace.Path, b.Replace.Path)
		}
		return sameModule(a.Replace, b.Replace)
	}
	return ""
}

func settingMap(bi *debug.BuildInfo) map[string]string {
	m := map[string]string{}
	for _, s := range bi.Settings {
		m[s.Key] = s.Value
	}
	return m
}
