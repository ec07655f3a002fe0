package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/overlay"
	"github.com/triage-sandbox/triage-sandbox/hostfs"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// The docker backend speaks the Docker Engine API to whatever answers at
// DOCKER_HOST (or [sandbox] docker_host): Docker's dockerd, or Podman's
// Docker-compatible service (`podman system service`). The two differ in
// a few places the policy depends on; each is handled or refused here,
// and the README's Podman section lists them.

// Engine names the engine that answers.
type Engine struct {
	// Name is "Docker" or "Podman".
	Name string
	// Version is the engine's own version (Docker 20.10.24, Podman 4.3.1).
	Version string
	// API is the Docker Engine API version it serves.
	API string
	// nproc is the service's own RLIMIT_NPROC hard limit, read through
	// the socket's peer (0: not known).
	nproc uint64
}

// Engine names.
const (
	EngineDocker = "Docker"
	EnginePodman = "Podman"
)

// IsPodman says whether the engine is Podman's compatible service.
func (e Engine) IsPodman() bool { return e.Name == EnginePodman }

// String is the engine as doctor says it: "Podman 4.3.1 (API 1.41)".
func (e Engine) String() string {
	return e.Name + " " + e.Version + " (API " + e.API + ")"
}

// EngineInfo implements backends.EngineReporter.
func (b *Backend) EngineInfo(ctx context.Context) (string, error) {
	e, err := b.Engine(ctx)
	if err != nil {
		return "", err
	}
	return e.String() + " at " + b.cli.DaemonHost(), nil
}

// engineOf reads the engine from its /_ping answer's Server header
// ("Docker/20.10.24+dfsg1 (linux)", "Libpod/4.3.1 (linux)") and Api-Version.
// Podman's /version takes seconds (it asks the package manager for its
// components' versions); its ping answers at once.
func engineOf(h http.Header) Engine {
	server, _, _ := strings.Cut(h.Get("Server"), " ")
	name, version, _ := strings.Cut(server, "/")
	e := Engine{Name: EngineDocker, Version: version, API: h.Get("Api-Version")}
	if name == "Libpod" || h.Get("Libpod-Api-Version") != "" {
		e.Name = EnginePodman
	}
	if e.Version == "" {
		e.Version = "(version not said)"
	}
	return e
}

// engineCache remembers the engine once it answered: one daemon serves a
// Backend for its whole life.
type engineCache struct {
	mu  sync.Mutex
	eng *Engine
}

// Engine asks the daemon which engine it is (once; later calls reuse the
// answer).
func (b *Backend) Engine(ctx context.Context) (Engine, error) {
	b.engine.mu.Lock()
	defer b.engine.mu.Unlock()
	if b.engine.eng != nil {
		return *b.engine.eng, nil
	}
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	h, err := pingHeaders(ctx, b.cli.Dialer())
	if err != nil {
		if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
			// A running daemon that refuses the caller: say what fixes it.
			return Engine{}, unreachable(b.cli.DaemonHost(), err, probeSocket(b.cli.DaemonHost()))
		}
		return Engine{}, fmt.Errorf("asking the engine at %s which it is: %w", b.cli.DaemonHost(), err)
	}
	e := engineOf(h)
	if e.IsPodman() {
		e.nproc = peerNproc(ctx, b.cli.Dialer())
	}
	b.engine.eng = &e
	return e, nil
}

// pingHeaders sends GET /_ping over dial and returns the answer's headers
// (the SDK's Ping keeps only some of them).
func pingHeaders(ctx context.Context, dial func(context.Context) (net.Conn, error)) (http.Header, error) {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) }}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://engine/_ping", nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/_ping answered %s", resp.Status)
	}
	return resp.Header, nil
}

// seccompDir holds the seccomp profiles written for Podman, this user's
// alone (the service runs as the same user: root, or the rootless user).
func seccompDir() string { return filepath.Join(filepath.Dir(controlDir()), "seccomp") }

// forPodman adapts a create request to Podman's compatible API:
//   - seccomp: Podman reads "seccomp=" as the path of a profile file on
//     its own host (dockerd takes the profile's JSON), so the profile is
//     written to a file of ours and named by path. The service must run on
//     this machine: a remote one would not find the file and fails the
//     create, never runs without the profile.
//   - tmpfs: Podman 4.3 knows no uid=, gid= or nr_inodes= option. A tmpfs
//     owned by the container's user gets "U" (Podman chowns it to the
//     container's user); any other owner is refused. An inode bound left
//     here (boundTmpfs moves them to the host) is refused, never dropped.
//     "notmpcopyup" keeps the image's files out of the tmpfs, as on Docker.
//   - nproc: unless told, rootful Podman gives a container RLIMIT_NPROC
//     1048576, which runc cannot set where root lacks CAP_SYS_RESOURCE (in
//     a container, as on CI machines): every start fails. The request names
//     the service's own limit, what dockerd's containers inherit.
//   - a read-only root: Podman adds writable tmpfs at /run, /var/tmp and
//     /tmp (its --read-only-tmpfs, on by default and not settable through
//     this API); Docker adds none. Podman adds them only where nothing is
//     mounted, so the request mounts empty read-only ones there.
func forPodman(req *CreateRequest, dir string, nproc uint64) error {
	if req.HostConfig.ReadonlyRootfs {
		for _, d := range podmanReadWriteTmpfs {
			if _, ok := req.HostConfig.Tmpfs[d]; !ok {
				req.HostConfig.Tmpfs[d] = closedTmpfs
			}
		}
	}
	for target, opts := range req.HostConfig.Tmpfs {
		adapted, err := podmanTmpfs(opts, req.Config.User)
		if err != nil {
			return fmt.Errorf("the tmpfs at %s: %w", target, err)
		}
		req.HostConfig.Tmpfs[target] = adapted
	}
	if nproc > 0 && !slices.ContainsFunc(req.HostConfig.Ulimits, func(u *container.Ulimit) bool { return u.Name == "nproc" }) {
		n := int64(min(nproc, math.MaxInt64))
		req.HostConfig.Ulimits = append(req.HostConfig.Ulimits, &container.Ulimit{Name: "nproc", Soft: n, Hard: n})
	}
	// Podman's compat API drops HostConfig.MaskedPaths; its own
	// "mask=" security option takes them (a ':'-separated list).
	if masked := req.HostConfig.MaskedPaths; len(masked) > 0 {
		for _, m := range masked {
			if strings.ContainsAny(m, ":,") {
				return fmt.Errorf("the masked path %q holds a ':' or ',', which Podman's mask option cannot carry; move it or use Docker", m)
			}
		}
		req.HostConfig.SecurityOpt = append(req.HostConfig.SecurityOpt, "mask="+strings.Join(masked, ":"))
	}
	for i, opt := range req.HostConfig.SecurityOpt {
		profile, ok := strings.CutPrefix(opt, "seccomp=")
		if !ok || !strings.HasPrefix(profile, "{") {
			continue
		}
		path, err := writeProfile(dir, []byte(profile))
		if err != nil {
			return fmt.Errorf("writing the seccomp profile for Podman: %w", err)
		}
		req.HostConfig.SecurityOpt[i] = "seccomp=" + path
	}
	return nil
}

// writeProfile writes profile to dir under its own hash (once; an existing
// file of that name holds the same bytes) and returns its path.
func writeProfile(dir string, profile []byte) (string, error) {
	if err := hostfs.PrivateDir(dir); err != nil {
		return "", err
	}
	sum := sha256.Sum256(profile)
	path := filepath.Join(dir, hex.EncodeToString(sum[:])+".json")
	if have, err := os.ReadFile(path); err == nil && string(have) == string(profile) {
		return path, nil
	}
	tmp, err := os.CreateTemp(dir, ".profile-")
	if err != nil {
		return "", err
	}
	_, err = tmp.Write(profile)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return "", err
	}
	return path, nil
}

// adapt edits a rendered create request for the engine that answers; ov
// holds the sandbox's host mounts (made here when Podman needs one); vols
// are the daemon's answers on the nosuid volumes, when asked already.
func (b *Backend) adapt(ctx context.Context, req *CreateRequest, p *policy.Policy, ov **overlay.Set, vols volumeAnswers) error {
	eng, err := b.Engine(ctx)
	if err != nil {
		return b.stageErr(ctx, "asking the engine which it is", err)
	}
	if !eng.IsPodman() {
		return b.ensureNoSuidVolumes(ctx, req, vols)
	}
	systemBinds(req)
	if err := boundTmpfs(req, p, ov); err != nil {
		return err
	}
	return forPodman(req, seccompDir(), eng.nproc)
}

// boundTmpfs: Podman 4.3's tmpfs takes no nr_inodes, so it cannot bound
// the staged writable paths' inodes (RES-07). As root the host mounts
// each such tmpfs itself, with every option, and binds it in; it goes with
// the sandbox's other host mounts (Close, or the sweep after a kill -9).
// Without root that is refused, unless the config accepts unbounded
// writes.
func boundTmpfs(req *CreateRequest, p *policy.Policy, ov **overlay.Set) error {
	var targets []string
	for t, opts := range req.HostConfig.Tmpfs {
		if strings.Contains(","+opts, ",nr_inodes=") {
			targets = append(targets, t)
		}
	}
	if len(targets) == 0 {
		return nil
	}
	slices.Sort(targets)
	if os.Geteuid() != 0 {
		if !slices.Contains(p.Accepted, profiles.CapBoundedWrites) {
			return errors.New("Podman cannot bound the inodes of the staged writable paths (its tmpfs takes no nr_inodes) and only root can mount a bounded tmpfs for it: run as root, or accept it with [sandbox] accept_weaker = [\"bounded_writes\"]")
		}
		for _, t := range targets {
			req.HostConfig.Tmpfs[t] = dropOption(req.HostConfig.Tmpfs[t], "nr_inodes")
		}
		return nil
	}
	if *ov == nil {
		if err := hostfs.PrivateDir(overlayRoot); err != nil {
			return fmt.Errorf("the staged paths' tmpfs for Podman: %w", err)
		}
		set, err := overlay.NewSet(filepath.Join(overlayRoot, req.Name))
		if err != nil {
			return fmt.Errorf("the staged paths' tmpfs for Podman: %w", err)
		}
		*ov = set
	}
	for i, t := range targets {
		src, err := (*ov).MountTmpfs("staged"+strconv.Itoa(i), req.HostConfig.Tmpfs[t])
		if err != nil {
			return fmt.Errorf("the tmpfs at %s for Podman: %w", t, err)
		}
		delete(req.HostConfig.Tmpfs, t)
		req.HostConfig.Mounts = append(req.HostConfig.Mounts, mount.Mount{
			Type: mount.TypeBind, Source: src, Target: t,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate},
		})
	}
	return nil
}

// dropOption removes key=... from a comma-separated option list.
func dropOption(opts, key string) string {
	var out []string
	for _, o := range strings.Split(opts, ",") {
		if k, _, _ := strings.Cut(o, "="); k != key {
			out = append(out, o)
		}
	}
	return strings.Join(out, ",")
}

// podmanReadWriteTmpfs are where Podman mounts writable tmpfs over a
// read-only root unless something else is mounted there.
var podmanReadWriteTmpfs = []string{"/run", "/var/tmp", "/tmp"}

// closedTmpfs is an empty, read-only tmpfs: it keeps a directory as closed
// as the read-only root would.
const closedTmpfs = "ro,nosuid,nodev,noexec,size=4096,mode=0755"

// podmanTmpfs rewrites one tmpfs's Docker options for Podman; user is the
// container's "uid:gid".
func podmanTmpfs(opts, user string) (string, error) {
	var out []string
	var owner []string
	for _, o := range strings.Split(opts, ",") {
		switch k, v, _ := strings.Cut(o, "="); k {
		case "uid", "gid":
			owner = append(owner, k+"="+v)
		case "nr_inodes":
			return "", errors.New("Podman's tmpfs cannot bound its inodes (nr_inodes)")
		default:
			out = append(out, o)
		}
	}
	if len(owner) > 0 {
		uid, gid, _ := strings.Cut(user, ":")
		if !slices.Equal(owner, []string{"uid=" + uid, "gid=" + gid}) {
			return "", fmt.Errorf("Podman can only give a tmpfs to the container's own user (%s), not %s", user, strings.Join(owner, ","))
		}
		out = append(out, "U")
	}
	return strings.Join(append(out, "notmpcopyup"), ","), nil
}
