// Package policy compiles a triage.toml and a role into one backend-neutral
// Policy: what the sandboxed command may read, write and reach, which
// environment it sees and how much it may use. Backends only translate it.
package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/egress/allow"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// Policy is the resolved, backend-neutral sandbox policy for one role. Every
// path in it is absolute and canonical; Env is already filtered.
type Policy struct {
	Role    profiles.Role `json:"role"`
	Backend string        `json:"backend"`
	// AllowAll means no isolation at all; every report says so loudly.
	AllowAll bool `json:"allow_all"`

	WorkspaceRoot string `json:"workspace_root"`
	Workdir       string `json:"workdir"`
	// Mounts are the host paths visible inside, at the same absolute path.
	Mounts []Mount `json:"mounts"`
	// Traversable are image directories that images keep closed (/root,
	// mode 0700) but that hold a mount: an image-root backend puts a tiny
	// empty tmpfs there that the sandbox identity can search, so it can
	// reach the mount below.
	Traversable []string `json:"traversable,omitempty"`
	// Unreadable are credential paths: never mounted, or masked where a
	// mounted parent would expose them.
	Unreadable []string `json:"unreadable"`
	// Masked is what the backend must hide explicitly under the mounts:
	// the unreadable paths that lie under one, the host sockets found in
	// them and the mounts' Hidden directories.
	Masked []string `json:"masked,omitempty"`
	// GitConfigs are the mounted repositories' git configs that held a
	// credential: unreadable, and given back sanitised (gitview.go).
	GitConfigs []GitConfigView `json:"git_configs,omitempty"`

	Network Network  `json:"network"`
	Env     []EnvVar `json:"env"`
	// ScratchEnv are variables pointing into the scratch, set once the
	// backend has placed it (EnvList).
	ScratchEnv []ScratchVar `json:"scratch_env,omitempty"`
	// Dropped lists the caller's variables that were withheld, and why. Values
	// are never kept here.
	Dropped []EnvDecision `json:"dropped_env"`

	Scratch Scratch `json:"scratch"`
	// Staging bounds the writable paths and keeps writes off the host
	// until they are copied back.
	Staging  Staging         `json:"staging"`
	Limits   profiles.Limits `json:"limits"`
	Lifetime Lifetime        `json:"lifetime"`
	User     Identity        `json:"user"`
	// Base is the readable root: an image, or host roots as an allow-list.
	Base    Base   `json:"base"`
	Runtime string `json:"runtime,omitempty"`
	// Namespace is where a cluster backend places the sandbox ("" the
	// client configuration's own).
	Namespace string `json:"namespace,omitempty"`
	// KubernetesAPI is how a cluster backend makes the sandbox: ""
	// (profiles.KubernetesPods) its own pods, or
	// profiles.KubernetesAgentSandbox the agent-sandbox controller's claims.
	KubernetesAPI string `json:"kubernetes_api,omitempty"`
	// Accepted are the weaker modes the config accepts ([sandbox]
	// accept_weaker): requirements a backend may lack without refusal.
	Accepted []Capability `json:"accepted_weaker,omitempty"`

	// Gate judges each command before the sandbox runs it.
	Gate Gate `json:"gate"`
	// Warm says how started sandboxes are reused.
	Warm Warm `json:"warm"`

	// Output bounds what is shown of the command's output; it does not
	// change isolation, so it is not part of the hash.
	Output OutputLimits `json:"output"`
	// AuditLog is the absolute path runs are recorded in.
	AuditLog string `json:"audit_log"`
	// AllowToolConfig are the writable paths (relative to the root) where a
	// run may leave names that make tools run code (.git, .envrc, ...);
	// elsewhere they are moved out of the tools' way after each run.
	AllowToolConfig []string `json:"allow_tool_config,omitempty"`
	// Python is the configured interpreter as the sandbox sees it ("" when
	// [project] python is a bare name: the image's own).
	Python string `json:"python,omitempty"`
	// GoCache is the Go project's prepared build cache (nil when the
	// project is not a Go module or the sandbox's go is not the host's).
	GoCache *GoCache `json:"go_cache,omitempty"`
	// Config is the triage.toml this policy came from ("" for the built-in
	// defaults); reports say which file was used.
	Config string `json:"config"`
	// Inputs are the host files and directories the policy was computed
	// from (inputs.go); none may be writable by a sandbox.
	Inputs []Input `json:"inputs,omitempty"`

	// TimeoutKey is the config key that decides Limits.Timeout (e.g.
	// "[repro] timeout"), so a timeout message names what to raise;
	// TimeoutDefault says it is unset and the role's default applies.
	TimeoutKey     string `json:"timeout_key"`
	TimeoutDefault bool   `json:"timeout_default,omitempty"`

	// Warnings are things the operator should know (an exact credential name
	// passed on purpose, a missing interpreter, allow_all).
	Warnings []string `json:"warnings,omitempty"`
}

// OutputLimits bound a run's output.
type OutputLimits struct {
	Limit   int64 `json:"limit_bytes"`   // head + tail shown, per stream
	Ceiling int64 `json:"ceiling_bytes"` // the command is stopped past this
}

// Mount is a host path made visible inside the sandbox at the same path.
type Mount struct {
	Path     string `json:"path"`
	ReadOnly bool   `json:"read_only"`
	// Kind is "dir" or "file"; backends need it for masks and binds.
	Kind string `json:"kind"`
	Why  string `json:"why"`
	// Discard (on a read-only mount): the command may write under it, and
	// what it writes is discarded with the sandbox. A backend renders it
	// as an overlay whose upper layer is bounded like the staged writable
	// paths, or, where it cannot, read-only (and says so). The host's
	// directory never changes either way.
	Discard bool `json:"discard,omitempty"`
	// System marks a host system directory (the host toolchain's /usr, or
	// a python environment or read_only path in profiles.SystemTrees that
	// only root can write): not scanned for sockets the way other mounts
	// are, and left out on a host-root base whose roots already give it
	// (system.go).
	System bool `json:"system,omitempty"`
	// NoSockets marks a path that is no unix socket and holds none by
	// construction, so it is not scanned for one on every run: a Go
	// module's extracted tree (written from a zip, which cannot hold a
	// socket, and left read-only by go) and its files in the download
	// cache (checked regular files), hundreds of them for a large go.sum.
	NoSockets bool `json:"no_sockets,omitempty"`
	// Hidden are directories under Path the sandbox is not given: masked
	// like the unreadable paths (an empty directory inside) and not
	// scanned for sockets, which the mask hides with the rest. Only what
	// no one inside needs: a venv's base site-packages when the venv does
	// not include them (venv.go).
	Hidden []string `json:"hidden,omitempty"`
	// Listed marks an entry of a skeleton directory (Staging.Skeletons),
	// mounted because it was there when the policy was built, not because
	// the config names it. WarmHash leaves it out.
	Listed bool `json:"listed,omitempty"`
}

// Network says what the sandbox may reach.
type Network struct {
	Mode NetworkMode `json:"mode"`
	// Rules (NetworkProxy) are the allow-list the host side's proxy
	// decides every connection with; none allows nothing.
	Rules []allow.Rule `json:"rules,omitempty"`
	// Key is the config key that decides the mode, for refusals and
	// hints ("[sandbox.reproducer] network").
	Key string `json:"key,omitempty"`
	// SocketDir (NetworkProxy) is the host directory holding the run's
	// proxy socket (egress.SocketInSandbox's base name), bound read-only
	// at the socket's parent in the sandbox. The run path sets it on its
	// copy of the policy before the backend starts; it is of one run,
	// so neither shown nor hashed.
	SocketDir string `json:"-"`
	// Brokers (NetworkProxy) are the secrets the proxy brokers
	// (broker.go); none by default.
	Brokers []Broker `json:"brokers,omitempty"`
	// HostProxy (NetworkProxy, for a backend whose sandbox shares the
	// host's loopback: seatbelt) is the run's proxy on a port of the
	// host's loopback and the secret it asks for. The run path sets it on
	// its copy of the policy, like SocketDir; the renderer allows that
	// port alone and EnvList names it, with the secret, in the proxy
	// variables. Of one run, and the secret never printed: neither shown
	// nor hashed.
	HostProxy *HostProxy `json:"-"`
}

// HostProxy is a run's network proxy on the host's loopback.
type HostProxy struct {
	Port   int
	Secret string
}

// URL is what the command's proxy variables say: the proxy on
// 127.0.0.1:Port with the secret as its password.
func (h HostProxy) URL() string {
	return egress.ProxyURL(net.JoinHostPort("127.0.0.1", strconv.Itoa(h.Port)), h.Secret)
}

// NetworkMode is the policy's decision on networking; renderers translate it.
type NetworkMode string

const (
	// NetworkLoopback: a network namespace of its own holding only lo; no
	// route out and the host's listeners unreachable.
	NetworkLoopback NetworkMode = "loopback"
	// NetworkOutbound: a namespace of its own with a NAT'd route out. Never
	// the host's own network namespace (that would expose host loopback).
	NetworkOutbound NetworkMode = "outbound"
	// NetworkHost: no isolation (allow_all only).
	NetworkHost NetworkMode = "host"
	// NetworkProxy: the loopback-only namespace of NetworkLoopback plus
	// the host side's proxy (package egress) as the only way out, deciding
	// each connection by Network.Rules.
	NetworkProxy NetworkMode = "proxy"
)

// LoopbackOnly reports whether nothing beyond the sandbox's own loopback is reachable.
func (n Network) LoopbackOnly() bool { return n.Mode == NetworkLoopback }

// Base kinds: what the sandbox's root filesystem is.
const (
	BaseImage = "image"
	BaseHost  = "host"
)

// Base is the readable base filesystem.
type Base struct {
	Kind string `json:"kind"`
	// Image is the root for image-root backends (docker, oci).
	Image string `json:"image,omitempty"`
	// HostRoots are the only host directories a host-root backend (local,
	// seatbelt) exposes read-only, besides Mounts: an allow-list.
	HostRoots []string `json:"host_roots,omitempty"`
}

// Lifetime rules every backend applies the same way.
type Lifetime struct {
	// Lifeline: the sandbox dies with triage-sandbox (even by kill -9).
	Lifeline bool `json:"lifeline"`
	// TTLMargin: a sandbox is killed this long after its command's timeout
	// even if everything else failed (a half-open connection, --stdin).
	TTLMargin time.Duration `json:"ttl_margin_ns"`
	// KillGrace: between SIGTERM and SIGKILL at a timeout.
	KillGrace time.Duration `json:"kill_grace_ns"`
}

// Warm is how started sandboxes are reused, an explicit choice because it
// changes what may persist: within a session, files in scratch persist
// from one command to the next (never into another session; each
// command's process tree ends with it); a pooled sandbox runs exactly one command, like a
// cold one, only started ahead of time.
type Warm struct {
	// Session names the session whose sandbox runs the commands ("" for none).
	Session string `json:"session,omitempty"`
	// Pool is how many started sandboxes are kept ready (0 for none).
	Pool int `json:"pool,omitempty"`
	// Idle ends a session or pool that nothing used for this long.
	Idle time.Duration `json:"idle_ns,omitempty"`
}

// EnvVar is one variable set inside the sandbox.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	Why   string `json:"why"`
}

// EnvDecision records why a caller variable was withheld.
type EnvDecision struct {
	Name string `json:"name"`
	Why  string `json:"why"`
	// Credential is true when the name or the value looks like a secret;
	// output redaction treats such values as secrets.
	Credential bool `json:"credential"`
}

// Scratch is the fresh, empty per-sandbox space for HOME and TMPDIR. The
// policy decides sizes, modes and flags; the backend allocates the paths
// (a container path, a per-sandbox host directory) and HOME and TMPDIR
// follow them.
type Scratch struct {
	Size     int64  `json:"size_bytes"`
	HomeMode uint32 `json:"home_mode"`
	TmpMode  uint32 `json:"tmp_mode"`
	// Exec: programs may run from scratch (venvs, pip --user, git hooks).
	Exec bool `json:"exec"`
	// NoSuid and NoDev: set-id bits and device nodes mean nothing there.
	NoSuid bool `json:"nosuid"`
	NoDev  bool `json:"nodev"`
}

// ScratchPaths are where a started sandbox put its scratch.
type ScratchPaths struct {
	Home string `json:"home"`
	Tmp  string `json:"tmp"`
}

// Identity is the uid:gid the command runs as. Never 0 unless AllowAll.
type Identity struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
	// Switch: the identity differs from the caller's, so the backend must
	// be able to switch uid.
	Switch bool `json:"switch"`
	// Why explains the choice (the caller, the workspace owner, the config).
	Why string `json:"why"`
}

// Timeout is the role's wall-clock limit.
func (p *Policy) Timeout() time.Duration { return p.Limits.Timeout }

// Writable returns the writable mounts' paths.
func (p *Policy) Writable() []string {
	var out []string
	for _, m := range p.Mounts {
		if !m.ReadOnly {
			out = append(out, m.Path)
		}
	}
	return out
}

// EnvList renders Env as NAME=VALUE strings, with HOME and TMPDIR pointing
// at the sandbox's scratch.
func (p *Policy) EnvList(scratch ScratchPaths) []string {
	out := make([]string, 0, len(p.Env)+2+len(p.ScratchEnv))
	set := map[string]bool{}
	for _, e := range p.Env {
		v := e.Value
		if h := p.Network.HostProxy; h != nil && p.Network.Mode == NetworkProxy && isProxyVar(e.Name) {
			v = h.URL() // the run's proxy, not the holder's forwarder
		}
		out = append(out, e.Name+"="+v)
		set[e.Name] = true
	}
	if p.AllowAll {
		return out
	}
	out = append(out, "HOME="+scratch.Home, "TMPDIR="+scratch.Tmp)
	for _, v := range p.ScratchEnv {
		if set[v.Name] {
			continue // set_env wins
		}
		dir := scratch.Tmp
		if v.Under == "home" {
			dir = scratch.Home
		}
		out = append(out, v.Name+"="+v.Prefix+dir+"/"+v.Rel)
	}
	return out
}

// ScratchVar is a variable whose value lies in the sandbox's scratch (a
// cache a read-only checkout cannot hold): Prefix + the scratch dir + Rel.
type ScratchVar struct {
	Name   string `json:"name"`
	Under  string `json:"under"` // "home" or "tmp"
	Rel    string `json:"rel"`
	Prefix string `json:"prefix,omitempty"`
	Why    string `json:"why"`
}

// Hash is a stable digest of everything that decides isolation and of the
// gate that judges each command. Warnings and
// explanations do not change it, and neither does the working directory:
// it is each command's (backends.Command.Workdir), not the sandbox's, so a
// session keeps its sandbox when a command starts elsewhere.
func (p *Policy) Hash() string { return p.digest(true) }

// WarmHash is what a warm sandbox (a session's, a pool's) is kept by: the
// Hash without the entries a skeleton directory's listing added (Listed
// mounts). Files appear at the workspace root without anything deciding
// it: the conflict file written beside NOTES.md, a file the maintainer
// drops there. A sandbox started before they appeared does not have them
// (it sees less, never more), so it may keep running; a new sandbox gets
// them. An entry removed since stays as the kept sandbox saw it at its
// start, which it could read all along. Everything the config, the credential list and the host decide
// (every other mount, masks, unreadable paths, limits, ...) stays in it,
// so a real change still ends the old sandbox. Nothing a sandbox writes
// reaches the policy except through a listing: its writable directories
// are staged whole and never listed, and what it writes beside a
// writable file is discarded.
func (p *Policy) WarmHash() string { return p.digest(false) }

// unhashed are the Policy fields a sandbox does not depend on, each with
// why. Every other field is in Hash: a field added to Policy is hashed
// until it is listed here with a reason (TestHashCoversEveryField).
var unhashed = map[string]string{
	"Workdir":        "each command carries its own start directory (a session's commands too)",
	"Dropped":        "the variables left out, for explain: Env is what the sandbox gets",
	"Output":         "bounds what the host shows of each command's output; it changes no isolation",
	"AuditLog":       "where the host writes its record of each command",
	"Config":         "the config file's path: what it decides is in the other fields",
	"Inputs":         "the files the policy was read from and the proof no sandbox can write them: what they decide is in the other fields",
	"TimeoutKey":     "names the key a timeout message points at",
	"TimeoutDefault": "says the timeout is the role's default, for messages",
	"Warnings":       "messages",
}

// digest is Hash (listed true) or WarmHash (listed false): the policy as
// JSON with the unhashed fields, the explanations (Why) and, for the warm
// hash, what a listing of the workspace root added (Listed mounts, the
// symlinks found in a skeleton) left out.
func (p *Policy) digest(listed bool) string {
	c := *p
	v := reflect.ValueOf(&c).Elem()
	for name := range unhashed {
		v.FieldByName(name).SetZero()
	}
	c.Mounts = nil
	for _, m := range p.Mounts {
		if m.Listed && !listed {
			continue
		}
		m.Why = ""
		c.Mounts = append(c.Mounts, m)
	}
	c.Env = slices.Clone(p.Env)
	for i := range c.Env {
		c.Env[i].Why = ""
	}
	c.ScratchEnv = slices.Clone(p.ScratchEnv)
	for i := range c.ScratchEnv {
		c.ScratchEnv[i].Why = ""
	}
	c.User.Why = ""
	if !listed {
		c.Staging.Links = nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		panic("policy: hash: " + err.Error()) // plain data; cannot fail
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ShortHash is the first 12 hex digits of Hash, for labels and reports.
func (p *Policy) ShortHash() string { return p.Hash()[len("sha256:"):][:12] }
