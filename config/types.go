// Package config loads and validates ai-triager's triage.toml. Keys the harness
// owns are read where triage-sandbox needs them and otherwise ignored; inside
// [sandbox*] every key is checked and an unknown one is an error.
package config

import "github.com/triage-sandbox/triage-sandbox/profiles"

// File is a loaded triage.toml (or the built-in defaults when there is none).
type File struct {
	// Path is the absolute path of the file that was read; "" for built-in defaults.
	Path string
	// Root is the workspace root: the directory holding the file, or the current
	// directory when there is no file. Always absolute and cleaned.
	Root string

	Project Project
	Repro   Repro

	// Sandbox is [sandbox] itself; Agent and Reproducer are [sandbox.agent] and
	// [sandbox.reproducer], shallow overrides of it (unset fields are nil).
	Sandbox    Sandbox
	Agent      Sandbox
	Reproducer Sandbox
	Guard      Guard
	MCP        MCP

	// Warnings are what is not wrong enough to refuse, each on one line
	// with file:line: a key of a harness-owned table ([project], [repro])
	// a typo away from one triage-sandbox reads.
	Warnings []string
}

// Project is the part of [project] the sandbox needs.
type Project struct {
	Checkout string // as written; relative paths are relative to Root
	// Python is as written; "" means the default "python3". A relative
	// path resolves against Root (the workspace root), like Checkout; a
	// bare name is looked up on the sandbox's PATH.
	Python string
}

// Repro is the part of [repro] the sandbox needs.
type Repro struct {
	Timeout *int // seconds
}

// Sandbox holds the keys of [sandbox] (and of a per-role table). A nil field
// (or nil slice/map) means "not set here". Each field has its key in
// sandboxKeys (keys.go), which reads it and merges it per role.
type Sandbox struct {
	Backend   *string           // one of Options.Backends
	Network   *Network          // false = loopback only; see Network
	Image     *string           // docker image
	Env       []string          // extra variable names, shell wildcards allowed
	Secrets   []string          // replaces the unreadable-path list
	Writable  []string          // relative to Root
	AllowAll  *bool             // no isolation at all
	SetEnv    map[string]string // fixed variables set inside (e.g. LLMFORMAT = "1")
	Timeout   *int              // seconds; overrides the role default
	Memory    *int64            // bytes (written "2g", "512m" or a byte count)
	CPUs      *float64          // e.g. 1.5
	Pids      *int64            // process limit
	TmpfsSize *int64            // bytes, size of each scratch tmpfs (HOME, TMPDIR)
	FileSize  *int64            // bytes, the largest file a command may write
	ShmSize   *int64            // bytes, /dev/shm
	// WritableSize and WritableInodes bound each staged writable path.
	WritableSize   *int64
	WritableInodes *int64
	Runtime        *string // docker runtime, e.g. "runsc"
	Namespace      *string // kubernetes namespace
	// KubernetesAPI is how the kubernetes backend makes sandboxes: "pods"
	// or "agent-sandbox".
	KubernetesAPI *string
	// Pool keeps this many started sandboxes ready, each for one command.
	Pool *int64
	// WarmIdle ends a session or pool unused this long (seconds).
	WarmIdle    *int
	User        *string // "uid:gid" used inside when triage-sandbox runs as root
	OutputLimit *int64  // bytes of output kept (head + tail)
	// OutputCeiling stops a command that prints more than this many bytes.
	OutputCeiling *int64
	Deny          []string // extra deny-list patterns for the gate
	// Confirm are extra gate patterns that need the operator's yes.
	Confirm []string
	// GateDisable names default gate rules that do not apply; GateConfirm
	// default rules whose verdict becomes confirm instead of deny.
	GateDisable []string
	GateConfirm []string
	// AllowDynamic lets the agent role run commands the gate cannot judge
	// statically (eval, a program name from a variable).
	AllowDynamic *bool
	AuditLog     *string // audit log path, relative to Root
	// AcceptWeaker names requirements a backend may lack (weaker modes the
	// operator accepts), e.g. "own_loopback" for seatbelt.
	AcceptWeaker []profiles.Capability
	// ReadOnly are extra host directories mounted read-only (absolute, "~/"
	// or relative to Root), e.g. a tool cache the project needs.
	ReadOnly []string
	// AllowToolConfig lists writable paths where a run may leave .git,
	// .envrc, editor settings and their kin (moved aside elsewhere).
	AllowToolConfig []string
	// Toolchain is where an image-root backend's programs come from:
	// "host" (the host's /usr over the image) or "image" (the image's own).
	Toolchain *string
	// CheckoutWrites is what happens to writes under the project checkout:
	// "discard" (allowed, thrown away with the sandbox) or "refuse" (EROFS).
	CheckoutWrites *string
	// Broker are the secrets brokered through the network proxy, by the
	// name of the variable of triage-sandbox's own environment holding
	// each ([sandbox.reproducer.broker.GH_TOKEN]); none by default.
	Broker map[string]Broker
}

// Broker is one [sandbox.<role>.broker.NAME] table: the sandbox gets NAME
// as a placeholder, and the network proxy puts the real value (NAME in
// triage-sandbox's own environment) in its place only on requests to
// Hosts with Methods.
type Broker struct {
	Hosts   []string // names, each on the role's network allow-list
	Methods []string // upper case; GET and HEAD when not set
}

// MCP is [sandbox.mcp], what `triage-sandbox mcp` holds at once; each
// field has its key in mcpKeys (keys.go).
type MCP struct {
	// MaxSessions bounds the named sessions alive at once: each holds a
	// started sandbox (its memory, tmpfs and watcher) until it ends.
	MaxSessions *int64
	// MaxStarting bounds the sandboxes being started at once.
	MaxStarting *int64
	// MaxRuns bounds the runs without a session at once: each holds a
	// sandbox of its own for the length of its command.
	MaxRuns *int64
}

// Network is the value of a role's `network` key: false (loopback only),
// true (a route out to anything) or a list of allow-list entries (package
// egress/allow), every connection decided by the host side's proxy.
type Network struct {
	On bool // network = true
	// List: the key is a list (possibly empty: nothing is allowed). Allow
	// holds its entries as written, each checked at load.
	List  bool
	Allow []string
}

// Off reports whether the value is `false`.
func (n Network) Off() bool { return !n.On && !n.List }

// Guard is [sandbox.guard]; each field has its key in guardKeys (keys.go).
type Guard struct {
	Enabled *bool
	Model   *string
	MinSafe *float64
	MaxRisk *float64
	URL     *string // endpoint of the decision model
	Timeout *int    // seconds
	// Command is an external decision command (JSON on stdin and stdout),
	// instead of URL.
	Command []string
	// APIKeyEnv names the variable holding the endpoint's bearer token.
	APIKeyEnv *string
}
