package policy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/mod/module"

	"github.com/triage-sandbox/triage-sandbox/hostread"
)

// Go dependencies without the network. A reproducer has no route out, so
// `go test` of a module with dependencies fails at once dialing the module
// proxy. The host's module cache has them, but it also holds every other
// module the maintainer ever built, private work included: so the sandbox
// gets exactly the module versions the project's go.sum names, each mounted
// read-only at its own path in the host's cache, and the go command is told
// to look nowhere else (GOPROXY=off, GOSUMDB=off, GOTOOLCHAIN=local).
//
// What is mounted per module version, and why:
//   - the extracted tree <module>@<version>: what the build reads; without
//     it go would need the zip and a writable cache to extract it into.
//   - cache/download/<module>/@v/<version>.mod: go reads every go.mod of
//     the module graph from here (a go.sum "/go.mod" line names only this).
//   - <version>.ziphash: go refuses an extracted tree whose ziphash is
//     missing ("not completely extracted"), and checks it against go.sum.
//   - <version>.info: what `go list -m` and build info report (its time).
//
// The zip itself is not: the extracted tree makes it redundant and it is
// the largest file. go.sum is read from the host's checkout, never from a
// path the sandbox can write (a go.sum a reproducer wrote would choose
// which of the maintainer's modules the next one sees). Its module paths
// are hostile input: each is checked as the go command checks it
// (module.Check) and escaped as the cache escapes it, and no symlink on
// the way into the cache is followed.

// goSumLimit bounds the go.sum read (Kubernetes' is about 100 KiB).
const goSumLimit = 8 << 20

// goDeps is what the policy gives a Go project: mounts and variables.
type goDeps struct {
	mounts   []Mount
	env      []EnvVar
	warnings []string
	// dir is the Go module's directory, and goMod and goSum its files as
	// the host has them: the prepared build cache's key ("" when the
	// files are not trusted or not there).
	dir          string
	goMod, goSum []byte
}

// goDependencies decides the Go mounts and variables for the project in
// dir (the checkout, else the workspace root) when it is a Go module.
// A go.mod or go.sum, the module cache or the go env file that any
// sandbox of the workspace could write refuses the policy (sources.go).
func goDependencies(p *Policy, dir string, host Host, written sandboxWritten) (goDeps, error) {
	rd := host.Reads
	var d goDeps
	if dir == "" {
		return d, nil
	}
	if _, err := rd.Lstat(filepath.Join(dir, "go.mod")); err != nil {
		return d, nil // not a Go module (go.work alone: not handled yet)
	}
	d.env = goEnv("")
	for _, name := range []string{"go.mod", "go.sum"} {
		path := filepath.Join(dir, name)
		if err := written.check("the Go module's "+path, path); err != nil {
			return d, err
		}
	}
	mod, sum, hasSum, warn := readGoFiles(rd, dir)
	if warn != "" {
		d.warnings = append(d.warnings, warn)
		return d, nil
	}
	d.dir, d.goMod, d.goSum = dir, mod, sum
	if hasSum { // no go.sum: no dependencies
		return d, d.mountModules(p, host, sum, written)
	}
	return d, nil
}

// readGoFiles reads dir's go.mod and go.sum as the host has them (checked
// by the caller: no sandbox could write them); warn says why they are not
// used.
func readGoFiles(rd *hostread.Recorder, dir string) (mod, sum []byte, hasSum bool, warn string) {
	mod, err := readHostFile(rd, filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, nil, false, fmt.Sprintf("Go module %s: reading go.mod: %v", dir, err)
	}
	sum, err = readHostFile(rd, filepath.Join(dir, "go.sum"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return mod, nil, false, ""
	case err != nil:
		return nil, nil, false, fmt.Sprintf("Go module %s: reading go.sum: %v; its dependencies are not mounted", dir, err)
	}
	return mod, sum, true, ""
}

// mountModules mounts the module versions go.sum names from the host's
// module cache and points GOMODCACHE there.
func (d *goDeps) mountModules(p *Policy, host Host, sum []byte, written sandboxWritten) error {
	rd := host.Reads
	cache, why, err := goModCache(host, written)
	if err != nil {
		return err
	}
	if cache == "" {
		d.warnings = append(d.warnings, "Go module "+d.dir+": the host's module cache is not known ("+why+"); its dependencies are not mounted")
		return nil
	}
	if w := goCacheUsable(p, cache); w != "" {
		d.warnings = append(d.warnings, w)
		return nil
	}
	versions, bad := parseGoSum(sum)
	sumPath := filepath.Join(d.dir, "go.sum")
	if len(bad) > 0 {
		d.warnings = append(d.warnings, fmt.Sprintf("%s: %d lines name no valid module version and were skipped (first: %s)", sumPath, len(bad), bad[0]))
	}
	ms, missing := moduleMounts(rd, cache, versions)
	d.mounts = ms
	// Nothing mounted: the cache's path does not exist inside, and go
	// would fail creating it; its default (in HOME) lets it say which
	// module it cannot look up.
	if len(ms) > 0 {
		d.env = goEnv(cache)
	}
	if len(missing) > 0 {
		d.warnings = append(d.warnings, fmt.Sprintf("%d of the modules %s names are not in the host's module cache %s (first: %s): run `go mod download` in %s on the host (see README, Dependencies)",
			len(missing), sumPath, cache, missing[0], d.dir))
	}
	return nil
}

// goEnv are the variables that keep the go command off the network and on
// the mounted modules; GOMODCACHE only with a cache ("" leaves go's
// default, in the sandbox's HOME). GOFLAGS is left alone: -mod=mod would
// let go rewrite go.mod and go.sum, and the default (-mod=readonly) names
// a module that is missing instead.
func goEnv(cache string) []EnvVar {
	env := []EnvVar{
		{Name: "GOPROXY", Value: "off", Why: "Go: no module proxy is reachable; go.sum's modules are mounted"},
		{Name: "GOSUMDB", Value: "off", Why: "Go: go.sum is the checksums' source; the checksum database is not reachable"},
		{Name: "GOTOOLCHAIN", Value: "local", Why: "Go: the mounted go, never a toolchain download"},
	}
	if cache != "" {
		env = append(env, EnvVar{Name: "GOMODCACHE", Value: cache, Why: "Go: the host's module cache, of which only go.sum's modules are mounted"})
	}
	return env
}

// goModCache is the host user's module cache as `go env GOMODCACHE` would
// give it, without running go (a run's policy is built in milliseconds):
// GOMODCACHE, else the go env file's GOMODCACHE or GOPATH, else GOPATH's
// first entry, else ~/go; then /pkg/mod, canonical.
//
// The go env file and the cache, as named, are policy inputs (written):
// err refuses one a sandbox could write.
func goModCache(host Host, written sandboxWritten) (dir, why string, err error) {
	rd := host.Reads
	fileVars, err := goEnvFile(host, written)
	if err != nil {
		return "", "", err
	}
	get := func(name string) string {
		if v, ok := host.Getenv(name); ok && v != "" {
			return v
		}
		return fileVars[name]
	}
	dir = get("GOMODCACHE")
	if dir == "" {
		gopath := filepath.SplitList(get("GOPATH"))
		switch {
		case len(gopath) > 0 && gopath[0] != "":
			dir = filepath.Join(gopath[0], "pkg", "mod")
		case host.Home != "":
			dir = filepath.Join(host.Home, "go", "pkg", "mod")
		}
	}
	if !filepath.IsAbs(dir) {
		return "", "GOMODCACHE and GOPATH are not absolute and there is no home", nil
	}
	if err := written.check("the host's Go module cache "+dir, dir); err != nil {
		return "", "", err
	}
	real, err := canonicalDir(rd, dir)
	if err != nil {
		return "", err.Error(), nil
	}
	return real, "", nil
}

// goEnvFile reads the go command's environment file (GOENV, else
// $XDG_CONFIG_HOME/go/env, else ~/.config/go/env): NAME=VALUE lines.
func goEnvFile(host Host, written sandboxWritten) (map[string]string, error) {
	rd := host.Reads
	path, _ := host.Getenv("GOENV")
	if path == "off" {
		return nil, nil
	}
	if path == "" {
		cfg, ok := host.Getenv("XDG_CONFIG_HOME")
		if !ok || !filepath.IsAbs(cfg) {
			cfg = filepath.Join(host.Home, ".config")
		}
		path = filepath.Join(cfg, "go", "env")
	}
	if !filepath.IsAbs(path) {
		return nil, nil // go itself reads no relative env file
	}
	if err := written.check("the go env file "+path, path); err != nil {
		return nil, err
	}
	b, err := readHostFile(rd, path)
	if err != nil {
		return nil, nil
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			out[k] = v
		}
	}
	return out, nil
}

// goCacheUsable refuses a module cache that lies in an unreadable path or
// under a writable one (what a sandbox wrote there would be the next
// one's dependency).
func goCacheUsable(p *Policy, cache string) string {
	for _, u := range p.Unreadable {
		if within(u, cache) {
			return fmt.Sprintf("the host's Go module cache %s lies in the unreadable path %s; Go dependencies are not mounted", cache, u)
		}
	}
	if w := writableCovers(p, cache); w != "" {
		return fmt.Sprintf("the host's Go module cache %s is under the writable path %s; Go dependencies are not mounted", cache, w)
	}
	return ""
}

// writableCovers names the writable mount at or above path ("" for none).
func writableCovers(p *Policy, path string) string {
	for _, m := range p.Mounts {
		if !m.ReadOnly && within(m.Path, path) {
			return m.Path
		}
	}
	return ""
}

// readHostFile reads a regular file, never through a symlink at its last
// element, at most goSumLimit bytes.
func readHostFile(rd *hostread.Recorder, path string) ([]byte, error) {
	f, err := rd.OpenNoFollow(path, syscall.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, goSumLimit+1))
	if err != nil {
		return nil, err
	}
	if len(b) > goSumLimit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, goSumLimit)
	}
	return b, nil
}

// goVersion is one module version go.sum names; modOnly when it names
// only its go.mod (a module of the graph whose packages are not built).
type goVersion struct {
	module.Version
	modOnly bool
}

// parseGoSum returns the module versions go.sum names, each once (a
// version with a full hash line is not modOnly), in order, and the lines
// that are not a valid `path version hash` (kept short, for a warning).
func parseGoSum(data []byte) (versions []goVersion, bad []string) {
	index := map[module.Version]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<16)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			bad = append(bad, fmt.Sprintf("line %d", n))
			continue
		}
		ver, modOnly := strings.CutSuffix(f[1], "/go.mod")
		v := module.Version{Path: f[0], Version: ver}
		if err := module.Check(v.Path, v.Version); err != nil {
			bad = append(bad, fmt.Sprintf("line %d", n))
			continue
		}
		if i, ok := index[v]; ok {
			versions[i].modOnly = versions[i].modOnly && modOnly
			continue
		}
		index[v] = len(versions)
		versions = append(versions, goVersion{Version: v, modOnly: modOnly})
	}
	return versions, bad
}

// moduleMounts are the read-only mounts of each version's files in the
// cache (those present: see the package comment), and the versions
// missing from it ("path@version").
func moduleMounts(rd *hostread.Recorder, cache string, versions []goVersion) (ms []Mount, missing []string) {
	w := cacheWalker{rd: rd, root: cache, dirs: map[string]bool{}}
	for _, v := range versions {
		escPath, err1 := module.EscapePath(v.Path)
		escVer, err2 := module.EscapeVersion(v.Version.Version)
		if err1 != nil || err2 != nil {
			continue // module.Check passed: cannot happen
		}
		name := v.Path + "@" + v.Version.Version
		why := "Go module " + name + " (go.sum)"
		dl := filepath.Join("cache", "download", filepath.FromSlash(escPath), "@v", escVer)
		files := []string{".mod", ".info"}
		if !v.modOnly {
			files = append(files, ".ziphash")
		}
		found := 0
		for _, ext := range files {
			if full, ok := w.lookup(dl+ext, false); ok {
				ms = append(ms, Mount{Path: full, ReadOnly: true, Kind: "file", Why: why, NoSockets: true})
				if ext != ".info" {
					found++
				}
			}
		}
		complete := found == len(files)-1
		if !v.modOnly {
			full, ok := w.lookup(filepath.FromSlash(escPath)+"@"+escVer, true)
			if ok {
				ms = append(ms, Mount{Path: full, ReadOnly: true, Kind: "dir", Why: why, NoSockets: true})
			}
			complete = complete && ok
		}
		if !complete {
			missing = append(missing, name)
		}
	}
	return ms, missing
}

// cacheWalker finds paths below root through no symlink and no "..":
// each directory on the way is a real directory (looked up once).
type cacheWalker struct {
	rd   *hostread.Recorder
	root string
	dirs map[string]bool
}

// lookup returns root/rel when rel is local, every element above it a
// real directory, and it is a directory (dir) or a regular file.
func (w cacheWalker) lookup(rel string, dir bool) (string, bool) {
	rd := w.rd
	if !filepath.IsLocal(rel) || slices.Contains(strings.Split(rel, string(filepath.Separator)), "..") {
		return "", false
	}
	parent := filepath.Dir(rel)
	if parent != "." && !w.isDir(parent) {
		return "", false
	}
	full := filepath.Join(w.root, rel)
	fi, err := rd.Lstat(full)
	if err != nil {
		return "", false
	}
	if dir {
		return full, fi.IsDir()
	}
	return full, fi.Mode().IsRegular()
}

// isDir: rel and each directory above it are real directories.
func (w cacheWalker) isDir(rel string) bool {
	rd := w.rd
	if ok, seen := w.dirs[rel]; seen {
		return ok
	}
	ok := true
	if up := filepath.Dir(rel); up != "." {
		ok = w.isDir(up)
	}
	if ok {
		fi, err := rd.Lstat(filepath.Join(w.root, rel))
		ok = err == nil && fi.IsDir()
	}
	w.dirs[rel] = ok
	return ok
}
