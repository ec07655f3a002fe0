package policy

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/hostread"
)

// A venv runs on its base interpreter's prefix (pyvenv.cfg `home`): the
// program, its standard library (lib/pythonX.Y with lib-dynload), its
// shared library and the headers a C extension builds against. That prefix
// is mounted whole and, when it is the user's (a pyenv build, not /usr),
// scanned for sockets on every run. A base's site-packages is usually most
// of it (7,957 of 8,264 directories in a pyenv build with the maintainer's
// global packages, 0.2–0.8 s a run), yet a venv made the default way
// (include-system-site-packages = false) never reads it. So the base's
// site-packages of the venv's Python version is hidden (Mount.Hidden): the
// backends mask it like an unreadable path (an empty directory inside),
// and the scan does not walk it, since the mask hides whatever is in it,
// a socket included. Everything else of the base stays mounted and is
// scanned as before.
//
// Why reading pyvenv.cfg for this needs no trust in it: a python
// environment a sandbox could write is refused anyway (sources.go), and
// hiding only takes away: a forged `false` can only leave a venv without
// packages it was not reading (Python reads the same file and then does
// not look there), a forged `true` only leaves things as they were
// without this rule.

// venvUsesBaseSitePackages mirrors CPython's site.venv(): the pyvenv.cfg
// Python reads is the first regular file of bin/pyvenv.cfg and
// pyvenv.cfg in the environment's prefix; the base's site-packages are
// used unless its last include-system-site-packages (key compared in
// lower case) is other than "true" in lower case. No pyvenv.cfg: not a
// venv, its own site-packages are its environment (true).
func venvUsesBaseSitePackages(rd *hostread.Recorder, prefix string) bool {
	for _, cfg := range []string{filepath.Join(prefix, "bin", "pyvenv.cfg"), filepath.Join(prefix, "pyvenv.cfg")} {
		if fi, err := rd.Stat(cfg); err == nil && fi.Mode().IsRegular() {
			return includeSystemSite(rd, cfg)
		}
	}
	return true
}

// includeSystemSite reads one pyvenv.cfg as site.py does (universal
// newlines, key=value, both stripped). Unreadable: true, nothing hidden.
func includeSystemSite(rd *hostread.Recorder, path string) bool {
	b, err := rd.ReadFile(path)
	if err != nil {
		return true
	}
	value := "true"
	text := strings.ReplaceAll(strings.ReplaceAll(string(b), "\r\n", "\n"), "\r", "\n")
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.ToLower(strings.TrimSpace(k)) == "include-system-site-packages" {
			value = strings.ToLower(strings.TrimSpace(v))
		}
	}
	return value == "true"
}

// baseSitePackages are the site-packages directories of base (a venv's
// base prefix, canonical) for the Python versions the venv has a library
// directory for (venv/lib/pythonX.Y): real directories inside base that
// neither are nor hold the venv.
func baseSitePackages(rd *hostread.Recorder, base, venv string) []string {
	var versions []string
	libs, _ := rd.Glob(filepath.Join(venv, "lib*", "python*"))
	for _, l := range libs {
		if !slices.Contains(versions, filepath.Base(l)) {
			versions = append(versions, filepath.Base(l))
		}
	}
	var out []string
	baseLibs, _ := rd.Glob(filepath.Join(base, "lib*"))
	for _, lib := range baseLibs {
		for _, v := range versions {
			real, err := rd.EvalSymlinks(filepath.Join(lib, v, "site-packages"))
			if err != nil || !within(base, real) || real == base || within(real, venv) || slices.Contains(out, real) {
				continue
			}
			if fi, err := rd.Lstat(real); err == nil && fi.IsDir() {
				out = append(out, real)
			}
		}
	}
	slices.Sort(out)
	return out
}

// keepHiddenClear drops each hidden path that is or holds another mount:
// its mask would cover that mount too (runtimes mask after mounting).
// What is dropped stays mounted and is scanned.
func keepHiddenClear(ms []Mount) {
	for i := range ms {
		ms[i].Hidden = slices.DeleteFunc(ms[i].Hidden, func(h string) bool {
			return slices.ContainsFunc(ms, func(o Mount) bool { return within(h, o.Path) })
		})
		if len(ms[i].Hidden) == 0 {
			ms[i].Hidden = nil
		}
	}
}

// hiddenSet is the hidden paths of the mounts, for the socket scan.
func hiddenSet(ms []Mount) map[string]bool {
	out := map[string]bool{}
	for _, m := range ms {
		for _, h := range m.Hidden {
			out[h] = true
		}
	}
	return out
}
