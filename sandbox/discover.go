package sandbox

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/hostread"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// LoadConfig reads the config named by flag, or the nearest triage.toml from
// cwd upwards, or returns the built-in defaults rooted at cwd. A discovered
// file is refused when a sandbox could have written it (see trusted).
// backendNames are the names [sandbox] backend accepts (the registry's).
func LoadConfig(flag, cwd string, backendNames []string) (*config.File, error) {
	return LoadConfigReading(nil, flag, cwd, backendNames)
}

// LoadConfigReading is LoadConfig reading the host through rd (package
// hostread: a compile's record of what it read).
func LoadConfigReading(rd *hostread.Recorder, flag, cwd string, backendNames []string) (*config.File, error) {
	o := config.Options{Backends: backendNames, Reads: rd}
	load := o.Load
	if flag != "" {
		return load(flag)
	}
	found, err := o.FindAll(cwd)
	if err != nil {
		return nil, fmt.Errorf("looking for triage.toml: %w", err)
	}
	if len(found) == 0 {
		return config.Default(cwd), nil
	}
	if err := trusted(rd, found, load); err != nil {
		return nil, err
	}
	return load(found[0])
}

// trusted refuses a discovered config that lies inside a writable path:
// of an enclosing config (any role), or, when none encloses it, of a
// workspace above that runs on the built-in defaults. Otherwise a file a
// sandbox planted in its outputs would become the policy of any later run
// started below it.
func trusted(rd *hostread.Recorder, found []string, load func(string) (*config.File, error)) error {
	nearest := found[0]
	refuse := func(owner, rel string) error {
		return fmt.Errorf("%s lies in the writable path %q of %s, so a sandbox could have written it; refusing to use it (pass --config with the file you mean)",
			nearest, rel, owner)
	}
	for _, outer := range found[1:] {
		cfg, err := load(outer)
		if err != nil {
			return fmt.Errorf("the enclosing %s cannot be read, so whether %s is writable by a sandbox cannot be decided: %w", outer, nearest, err)
		}
		for _, role := range profiles.Roles() {
			rel, ok := writableCovering(cfg.Root, writableOf(cfg, role), nearest)
			if ok {
				return refuse(outer, rel)
			}
		}
	}
	if len(found) > 1 {
		return nil
	}
	for dir := filepath.Dir(filepath.Dir(nearest)); ; dir = filepath.Dir(dir) {
		if looksLikeDefaultWorkspace(rd, dir) {
			for _, role := range profiles.Roles() {
				if rel, ok := writableCovering(dir, profiles.Writable(role), nearest); ok {
					return refuse("the workspace "+dir+" (built-in defaults)", rel)
				}
			}
		}
		if dir == filepath.Dir(dir) {
			return nil
		}
	}
}

func writableOf(cfg *config.File, role profiles.Role) []string {
	if w := cfg.Resolve(role).Writable; w != nil {
		return w
	}
	return profiles.Writable(role)
}

// writableCovering returns the entry of writable (relative to root) that
// contains path.
func writableCovering(root string, writable []string, path string) (string, bool) {
	for _, w := range writable {
		full := filepath.Join(root, filepath.Clean(w))
		if path == full || strings.HasPrefix(path, full+string(filepath.Separator)) {
			return w, true
		}
	}
	return "", false
}

// looksLikeDefaultWorkspace: a directory an earlier run on the built-in
// defaults prepared (its agent outputs are there).
func looksLikeDefaultWorkspace(rd *hostread.Recorder, dir string) bool {
	isFile := func(name string) bool {
		fi, err := rd.Lstat(filepath.Join(dir, name))
		return err == nil && fi.Mode().IsRegular()
	}
	fi, err := rd.Lstat(filepath.Join(dir, ".triage"))
	return (err == nil && fi.IsDir()) || (isFile("NOTES.md") && isFile("INDEX.md"))
}
