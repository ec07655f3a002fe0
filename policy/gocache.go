package policy

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/triage-sandbox/triage-sandbox/hostread"
)

// Prepared caches. Every reproducer is a fresh sandbox, so its Go build
// cache starts empty and `go test` compiles the standard library and every
// dependency again (minutes on a small machine, past the reproducer's
// timeout). A prepared cache is built once per project, toolchain and
// lockfile by a trusted run (`triage-sandbox prepare`: the project's own
// checkout, as the host has it, before any issue is read) in a sandbox of
// the reproducer's policy, and kept in triage-sandbox's state directory,
// where no sandbox can write. Reproducers get it as a discard mount: they
// read it and may write under it, and what they write is discarded with
// the sandbox (an overlay), so no reproducer can poison another issue's
// build. Where a backend cannot make the overlay the mount stays read-only,
// which go tolerates: what it cannot store it rebuilds every run.
//
// The cache's directory is keyed by what makes its entries stale or
// foreign: the project's directory, go.mod, go.sum, the go toolchain (its
// path and VERSION) and the variables go reads; any change means another
// directory, and a reproducer uses a cache only under its exact key.

// GoCache is a project's prepared Go build cache.
type GoCache struct {
	// Dir is the cache's directory for the current key (it may not exist
	// yet); Project the module's directory (where prepare runs go).
	Dir     string `json:"dir"`
	Project string `json:"project"`
	// Ready: Dir holds a complete prepared cache, mounted for GOCACHE.
	Ready bool `json:"ready"`
}

// goCacheDone marks a complete cache (written last, before the rename).
const goCacheDone = ".triage-sandbox-prepared"

// goCacheMountWhy is the discard mount's why.
const goCacheMountWhy = "prepared Go build cache (triage-sandbox prepare): read, writes discarded"

// goCachesDir is where prepared Go build caches live.
func goCachesDir(host Host) string { return filepath.Join(stateDir(host), "caches", "go") }

// preparedGoCache decides the Go build cache of a Go project: its key,
// and when it is ready a discard mount and GOCACHE.
func preparedGoCache(p *Policy, host Host, d goDeps, written sandboxWritten) (*GoCache, []EnvVar, string) {
	rd := host.Reads
	if d.dir == "" {
		return nil, nil, ""
	}
	goBin := visibleGo(p, host, written)
	if goBin == "" {
		return nil, nil, "" // an image's own go: its version is not known here
	}
	h := sha256.New()
	field := func(name string, b []byte) { fmt.Fprintf(h, "%s %d\n%s\n", name, len(b), b) }
	field("project", []byte(d.dir))
	field("go.mod", d.goMod)
	field("go.sum", d.goSum)
	field("go", []byte(goBin))
	field("version", goVersionOf(rd, goBin))
	for _, e := range p.Env {
		if strings.HasPrefix(e.Name, "GO") || strings.HasPrefix(e.Name, "CGO_") || e.Name == "CC" || e.Name == "CXX" {
			field(e.Name, []byte(e.Value))
		}
	}
	sum := h.Sum(nil)
	c := &GoCache{Dir: filepath.Join(goCachesDir(host), projectKey(d.dir)+"-"+hex.EncodeToString(sum[:10])), Project: d.dir}
	fi, err := rd.Lstat(filepath.Join(c.Dir, goCacheDone))
	if err != nil || !fi.Mode().IsRegular() {
		return c, nil, fmt.Sprintf("no prepared Go build cache for %s (this go.mod, go.sum and go): every reproducer builds it cold; run `triage-sandbox prepare` once (README, Dependencies)", d.dir)
	}
	c.Ready = true
	p.Mounts = dedupeMounts(append(p.Mounts, Mount{Path: c.Dir, ReadOnly: true, Discard: true, Kind: "dir", Why: goCacheMountWhy}))
	return c, []EnvVar{{Name: "GOCACHE", Value: c.Dir, Why: "Go: the prepared build cache; what a run adds is discarded"}}, ""
}

// projectKey names a project's caches: its directory's name and a digest
// of its path (two checkouts named alike stay apart).
func projectKey(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return filepath.Base(dir) + "-" + hex.EncodeToString(sum[:6])
}

// visibleGo is the go the sandbox runs when it is the host's: the first on
// the host's PATH in a directory visible inside (under a host root or a
// read-only mount: the host toolchain), as the sandbox's PATH keeps those
// in the host's order; canonical, "" for none. The workspace root's
// mount puts nothing on PATH (systemPath), and a go a sandbox could have
// written (in, or through, a writable path) keys no cache: skipped.
func visibleGo(p *Policy, host Host, written sandboxWritten) string {
	rd := host.Reads
	hostPath, _ := host.Getenv("PATH")
	for _, dir := range filepath.SplitList(hostPath) {
		if !filepath.IsAbs(dir) {
			continue
		}
		if _, ok := written.via(filepath.Join(dir, "go")); ok {
			continue
		}
		bin := filepath.Join(dir, "go")
		fi, err := rd.Stat(bin)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			continue
		}
		visible := slices.ContainsFunc(p.Base.HostRoots, func(r string) bool { return within(r, dir) }) ||
			slices.ContainsFunc(p.Mounts, func(m Mount) bool {
				return m.ReadOnly && !m.Discard && m.Kind == "dir" && m.Path != p.WorkspaceRoot && within(m.Path, dir)
			})
		if !visible {
			continue // not on the sandbox's PATH (systemPath): the next one is
		}
		real, err := rd.EvalSymlinks(bin)
		if err != nil {
			return ""
		}
		return real
	}
	return ""
}

// goVersionOf is what identifies a go toolchain's build: GOROOT's VERSION
// file, else the binary's size and modification time.
func goVersionOf(rd *hostread.Recorder, goBin string) []byte {
	if b, err := readHostFile(rd, filepath.Join(filepath.Dir(filepath.Dir(goBin)), "VERSION")); err == nil {
		return b
	}
	if fi, err := rd.Stat(goBin); err == nil {
		return []byte(fmt.Sprintf("%d %d", fi.Size(), fi.ModTime().UnixNano()))
	}
	return nil
}

// GoCachePrepare is a prepare run's policy and where it builds the cache.
type GoCachePrepare struct {
	Policy *Policy
	// Building is the directory the run fills (GOCACHE, a staged writable
	// path); Commit makes it the cache.
	Building string
	cache    GoCache
	caches   string
}

// PrepareTimeout bounds a prepare run: a cold build of a large module.
const PrepareTimeout = 30 * time.Minute

// prepareStagedSize bounds the cache a prepare run may build (its staged
// copy's size; the memory limit grows by as much: a tmpfs is memory).
const prepareStagedSize = 4 << 30

// ForGoCachePrepare derives the policy of the run that builds p's Go
// build cache: the reproducer's (the same mounts, toolchain and variables,
// so the cache's entries are the ones a reproducer looks up), with GOCACHE
// a new, empty, staged directory in the caches directory, the role's
// writable paths gone (the run writes nothing but the cache), no pool, and
// room for a whole build. host must be the one p was built for.
func ForGoCachePrepare(p *Policy, host Host) (*GoCachePrepare, error) {
	rd := host.Reads
	if p.GoCache == nil {
		return nil, errors.New("nothing to prepare: no Go module whose go the sandbox runs (a go.mod in the checkout, and the host's go with toolchain = \"host\")")
	}
	caches := goCachesDir(host)
	if err := stateUncovered(p, p.GoCache.Dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(caches, 0o700); err != nil {
		return nil, fmt.Errorf("the caches directory: %w", err)
	}
	building := p.GoCache.Dir + ".building-" + randomSuffix()
	if err := os.Mkdir(building, 0o755); err != nil {
		return nil, fmt.Errorf("the cache's directory: %w", err)
	}
	if os.Geteuid() == 0 && p.User.UID != 0 {
		// The sandbox identity fills it, and reads it in every reproducer.
		if err := os.Lchown(building, p.User.UID, p.User.GID); err != nil {
			_ = os.Remove(building)
			return nil, fmt.Errorf("the cache's directory: %w", err)
		}
	}
	q := *p
	q.Mounts = nil
	for _, m := range p.Mounts {
		if !m.ReadOnly || strings.HasPrefix(m.Why, "read-only entry of ") || m.Why == goCacheMountWhy {
			continue
		}
		q.Mounts = append(q.Mounts, m)
	}
	q.Mounts = dedupeMounts(append(q.Mounts, Mount{Path: building, Kind: "dir", Why: "the Go build cache being prepared"}))
	// The state directory stays unreadable but for the cache being built:
	// its other entries are named instead (no mount covers it: checked),
	// so the staged copy is written back.
	q.Unreadable = nil
	for _, u := range p.Unreadable {
		if !within(u, building) {
			q.Unreadable = append(q.Unreadable, u)
			continue
		}
		q.Unreadable = append(q.Unreadable, siblingsOnTheWay(rd, u, building)...)
	}
	q.Staging = Staging{Size: max(p.Staging.Size, prepareStagedSize), Inodes: max(p.Staging.Inodes, 1<<20)}
	q.Limits.Memory += q.Staging.Size
	q.Limits.WritableSize, q.Limits.WritableInodes = q.Staging.Size, q.Staging.Inodes
	q.Limits.Timeout = PrepareTimeout
	q.Warm = Warm{}
	q.Env = slices.DeleteFunc(slices.Clone(p.Env), func(e EnvVar) bool { return e.Name == "GOCACHE" })
	q.Env = sortEnv(append(q.Env, EnvVar{Name: "GOCACHE", Value: building, Why: "Go: the build cache being prepared"}))
	if q.Base.Kind == BaseImage {
		q.Traversable = traversable(q.Mounts)
	}
	q.Workdir = p.GoCache.Project
	q.GoCache = nil
	return &GoCachePrepare{Policy: &q, Building: building, cache: *p.GoCache, caches: caches}, nil
}

// stateUncovered refuses a policy with a mount at or above an unreadable
// path that holds dir (the state directory): a prepare run names that
// path's other entries instead of the path, which only holds while no
// mount exposes it.
func stateUncovered(p *Policy, dir string) error {
	for _, u := range p.Unreadable {
		if !within(u, dir) {
			continue
		}
		for _, m := range p.Mounts {
			if within(m.Path, u) {
				return fmt.Errorf("the %s %s covers %s, which holds triage-sandbox's caches: a prepare run would see it; move the workspace out of it", m.Why, m.Path, u)
			}
		}
	}
	return nil
}

// siblingsOnTheWay lists, for each directory from top down to target's
// parent, its entries that are not on the way to target.
func siblingsOnTheWay(rd *hostread.Recorder, top, target string) []string {
	var out []string
	for dir := top; dir != target && within(dir, target); {
		rel, _ := filepath.Rel(dir, target)
		next := strings.Split(rel, string(filepath.Separator))[0]
		entries, _ := rd.ReadDir(dir)
		for _, e := range entries {
			if e.Name() != next {
				out = append(out, filepath.Join(dir, e.Name()))
			}
		}
		dir = filepath.Join(dir, next)
	}
	return out
}

// Commit makes the built directory the project's cache for its key, and
// removes the project's caches of other keys (stale: another go.mod,
// go.sum or go).
func (g *GoCachePrepare) Commit() error {
	if err := os.WriteFile(filepath.Join(g.Building, goCacheDone), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return fmt.Errorf("marking the cache complete: %w", err)
	}
	old := g.cache.Dir + ".old-" + randomSuffix()
	if err := os.Rename(g.cache.Dir, old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("replacing the cache: %w", err)
	}
	if err := os.Rename(g.Building, g.cache.Dir); err != nil {
		return fmt.Errorf("installing the cache: %w", err)
	}
	prefix := projectKey(g.cache.Project) + "-"
	entries, _ := os.ReadDir(g.caches)
	for _, e := range entries {
		full := filepath.Join(g.caches, e.Name())
		if strings.HasPrefix(e.Name(), prefix) && full != g.cache.Dir && !buildingNow(e) {
			_ = removeAllWritable(full)
		}
	}
	return nil
}

// buildingNow: e is a cache another prepare may still be building (one
// older than two prepare timeouts was left by a prepare that died).
func buildingNow(e os.DirEntry) bool {
	if !strings.Contains(e.Name(), ".building-") {
		return false
	}
	fi, err := e.Info()
	return err == nil && time.Since(fi.ModTime()) < 2*PrepareTimeout
}

// Abandon removes what the run built.
func (g *GoCachePrepare) Abandon() error { return removeAllWritable(g.Building) }

// Dir is where the cache is once committed.
func (g *GoCachePrepare) Dir() string { return g.cache.Dir }

// removeAllWritable removes dir, making read-only directories in it
// writable first (go's cache has none, but a run may leave them).
func removeAllWritable(dir string) error {
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(path, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
