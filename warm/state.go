package warm

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/triage-sandbox/triage-sandbox/hostfs"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	kmsg "github.com/triage-sandbox/triage-sandbox/protocol/keeper"
	"github.com/triage-sandbox/triage-sandbox/warm/fastpath"
)

// DirEnv overrides DefaultDir (tests, several independent installations).
const DirEnv = fastpath.DirEnv

// DefaultDir is where keepers keep their sockets and records: only this
// user can reach them. The front finds them there too (fastpath).
func DefaultDir() string { return fastpath.DefaultDir() }

// Kind of a keeper.
const (
	KindSession = kmsg.KindSession
	KindPool    = kmsg.KindPool
)

// Record describes a running keeper, beside its socket (protocol/keeper).
type Record = kmsg.Record

// PoolName is the name `session list` shows for the role's pool and
// `session end` takes: a pool has no name of its own in the config.
func PoolName(role profiles.Role) string { return kmsg.PoolName(role) }

// key names the keeper a policy needs: a session by its name within its
// workspace and role; a pool by role, policy, image and backend.
func key(p *policy.Policy) string {
	if p.Warm.Session != "" {
		return sessionKey(p.WorkspaceRoot, p.Role, p.Warm.Session)
	}
	id := strings.Join([]string{KindPool, string(p.Role), p.WarmHash(), p.Base.Image, p.Backend}, "\x00")
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:8])
}

// paths of one keeper (short: a unix socket path is at most 108 bytes).
type paths struct{ dir, k string }

func (p paths) socket() string { return filepath.Join(p.dir, p.k+".sock") }
func (p paths) record() string { return filepath.Join(p.dir, p.k+".json") }
func (p paths) lock() string   { return filepath.Join(p.dir, p.k+".lock") }
func (p paths) log() string    { return filepath.Join(p.dir, p.k+".log") }

func writeRecord(path string, r Record) error {
	b, err := kmsg.Encode(&r)
	if err != nil {
		return err
	}
	return hostfs.WriteFileReplace(path, b)
}

// readRecord reads a keeper's record; one of another protocol version
// comes back as what tells whether that keeper lives and how to end it
// (kmsg.DecodeRecord), its Protocol not this build's: listed, ended by
// signal, never swept while it lives, never attached to.
func readRecord(path string) (Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Record{}, err
	}
	r, err := kmsg.DecodeRecord(b)
	if mm := (*protocol.MismatchError)(nil); errors.As(err, &mm) {
		return r, nil
	}
	return r, err
}

// List returns the keepers recorded in dir, sessions first.
func List(dir string) ([]Record, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var out []Record
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), hostPrefix) {
			continue
		}
		if r, err := readRecord(filepath.Join(dir, e.Name())); err == nil {
			r.ID = strings.TrimSuffix(e.Name(), ".json")
			r.IdleAt(now)
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind > out[j].Kind
		}
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Named returns the live keepers called name (a session's name or a
// PoolName) of workspace. Several pools of one role may share a name
// (another backend, another policy): ending the name ends them all.
func Named(dir, name, workspace string) ([]Record, error) {
	recs, err := List(dir)
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, r := range recs {
		if r.Name == name && r.Workspace == workspace && r.Alive() {
			out = append(out, r)
		}
	}
	return out, nil
}

// Sweep removes the records, sockets and logs of keepers that are gone
// (their sandboxes went with them: the keeper was their lifeline).
func Sweep(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	removed := sweepHosts(dir, entries)
	var errs []error
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), hostPrefix) {
			continue // sweepHosts'
		}
		if strings.HasPrefix(e.Name(), "route-") {
			// A route to a keeper with no record, a minute old: the
			// session ended (a route names its keeper's record).
			if routeStale(dir, e) {
				_ = os.Remove(filepath.Join(dir, e.Name()))
			}
			continue
		}
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			// A lock, log or front socket whose keeper left no record:
			// gone a while.
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(e.Name(), ".lock"), ".log"), ".front.sock")
			if _, err := os.Stat(filepath.Join(dir, base+".json")); errors.Is(err, os.ErrNotExist) && base != e.Name() {
				if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > time.Minute {
					_ = os.Remove(filepath.Join(dir, e.Name()))
				}
			}
			continue
		}
		p := paths{dir, name}
		r, err := readRecord(p.record())
		if err == nil && r.Alive() {
			continue
		}
		if err != nil {
			if fi, serr := e.Info(); serr != nil || time.Since(fi.ModTime()) < time.Minute {
				continue
			}
		}
		for _, f := range []string{p.socket(), fastpath.FrontSocket(dir, name), p.record(), p.log(), p.lock()} {
			if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		removed = append(removed, "warm "+r.Kind+" "+name)
	}
	return removed, errors.Join(errs...)
}

// routeStale: the route file e in dir names a keeper that has no record,
// and is over a minute old (a run that just wrote it may still start one).
func routeStale(dir string, e os.DirEntry) bool {
	b, err := os.ReadFile(filepath.Join(dir, e.Name()))
	if err != nil {
		return false
	}
	fi, err := e.Info()
	if err != nil || time.Since(fi.ModTime()) < time.Minute {
		return false
	}
	_, err = os.Stat(paths{dir, strings.TrimSpace(string(b))}.record())
	return errors.Is(err, os.ErrNotExist)
}

// NoteRoute records in dir which keeper holds p's session or pool for
// runs started in cwd with the flags r (fastpath.ParseRun of the run's
// own argv), for the front's fast path (package warm/fastpath): only a
// hint, as the keeper compiles each such run's policy and runs it only
// when it is its own. Flags that do not name p's kind of keeper note
// nothing.
func NoteRoute(dir, cwd string, r fastpath.RunFlags, p *policy.Policy) error {
	switch {
	case p.Warm.Session != "" && r.Session == p.Warm.Session:
	case p.Warm.Session == "" && p.Warm.Pool > 0 && r.Session == "":
	default:
		return nil
	}
	if err := hostfs.PrivateDir(dir); err != nil {
		return err
	}
	return hostfs.WriteFileReplace(fastpath.RoutePath(dir, cwd, r), []byte(key(p)+"\n"))
}

// Mine reports whether a run's compiled policy p is kept by the keeper of
// kp, exactly: the same session, workspace and role, or the same pool,
// and the same warm hash, so attaching to that keeper neither ends nor
// starts one.
func Mine(kp, p *policy.Policy) bool { return Keeping(kp)(p) }

// Keeping is Mine for the keeper of kp, whose warm hash (the policy as
// JSON, hashed: tens of microseconds) is computed once: a keeper's policy
// never changes, and a front's run asks more than once.
func Keeping(kp *policy.Policy) func(p *policy.Policy) bool {
	mine := keepingHashed(kp)
	return func(p *policy.Policy) bool { return mine(p, "") }
}

// keepingHashed is Keeping taking p's warm hash when the caller has it
// (empty: computed here).
func keepingHashed(kp *policy.Policy) func(p *policy.Policy, warmHash string) bool {
	kh, kk := kp.WarmHash(), key(kp)
	return func(p *policy.Policy, warmHash string) bool {
		sameKind := p.Warm.Session != "" && kp.Warm.Session == p.Warm.Session ||
			p.Warm.Session == "" && kp.Warm.Session == "" && p.Warm.Pool > 0 && kp.Warm.Pool == p.Warm.Pool
		if !sameKind || kk != key(p) {
			return false
		}
		if warmHash == "" {
			warmHash = p.WarmHash()
		}
		return kh == warmHash
	}
}
