// Package profiles holds triage-sandbox's built-in defaults as data: the
// credential paths nobody may read, the environment allow-lists, the writable
// defaults and limits per role. Policy code reads these; nothing here decides.
package profiles

import "time"

// Roles are the two kinds of command triage-sandbox runs.
const (
	RoleAgent      = "agent"
	RoleReproducer = "reproducer"
)

// Roles lists the roles in report order.
func Roles() []string { return []string{RoleAgent, RoleReproducer} }

// CredentialPaths are unreadable in every role. "~" is the caller's home.
// ai-triager's SECRET_PATHS plus our own state and the macOS keychains.
func CredentialPaths() []string {
	return []string{
		"~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.config/gh",
		"~/.config/ai-triager", "~/.config/triage-sandbox", "~/.netrc", "~/.pypirc",
		"~/.docker", "~/.kube", "~/.git-credentials", "~/Library/Keychains",
		"/Library/Keychains",
	}
}

// RuntimeSockets are container-runtime control sockets: reaching one is root
// on the host, so they are unreadable whatever `secrets` says.
func RuntimeSockets() []string {
	return []string{
		"/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock",
		"/run/podman/podman.sock", "/run/crio/crio.sock", "~/.docker/run/docker.sock",
		"~/.colima/default/docker.sock", "~/.rd/docker.sock",
	}
}

// EnvAllow is the environment allow-list per role; entries may be shell wildcards.
func EnvAllow(role string) []string {
	if role == RoleAgent {
		return []string{"PATH", "HOME", "LANG", "LC_*"}
	}
	return []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TMPDIR", "TZ",
		"LANG", "LC_*", "PLAYWRIGHT_BROWSERS_PATH", "TRIAGE_*"}
}

// Writable is the default writable list per role, relative to the workspace root.
func Writable(role string) []string {
	if role == RoleAgent {
		return []string{"issues", "repros", "NOTES.md", "INDEX.md", ".triage"}
	}
	return []string{"repros"}
}

// Limits are the resource defaults per role.
type Limits struct {
	Timeout   time.Duration
	Memory    int64 // bytes; swap is set equal so there is none
	CPUs      float64
	Pids      int64
	NoFile    int64
	TmpfsSize int64 // each scratch tmpfs (HOME, TMPDIR)
	ShmSize   int64
}

// DefaultLimits returns the per-role resource defaults. Reproducers get more
// room because headless Chromium needs it (pids, /dev/shm, memory).
func DefaultLimits(role string) Limits {
	const mib = 1 << 20
	if role == RoleAgent {
		return Limits{Timeout: 300 * time.Second, Memory: 1024 * mib, CPUs: 1, Pids: 512,
			NoFile: 4096, TmpfsSize: 256 * mib, ShmSize: 64 * mib}
	}
	return Limits{Timeout: 120 * time.Second, Memory: 2048 * mib, CPUs: 2, Pids: 1024,
		NoFile: 4096, TmpfsSize: 512 * mib, ShmSize: 256 * mib}
}

// Output defaults: what is shown of a run's output (head + tail, per
// stream) and the hard ceiling past which the command is stopped.
const (
	DefaultOutputLimit   = 64 << 10
	DefaultOutputCeiling = 1 << 30
)

// DefaultAuditLog is where runs are recorded, relative to the workspace root.
const DefaultAuditLog = ".triage/audit.jsonl"

// DefaultImage is the docker image built from images/Dockerfile.
const DefaultImage = "triage-sandbox:latest"

// DefaultBaseImage is the base images/build-base.sh imports for offline builds.
const DefaultBaseImage = "triage-sandbox-base:bookworm"

// Label keys identify triage-sandbox's containers for sweeps and audit.
const (
	LabelOwner      = "io.triage-sandbox.owner"
	LabelRole       = "io.triage-sandbox.role"
	LabelPolicyHash = "io.triage-sandbox.policy-hash"
	LabelParentPID  = "io.triage-sandbox.parent-pid"
	LabelParentHost = "io.triage-sandbox.parent-host"
	LabelParentBoot = "io.triage-sandbox.parent-start"
	LabelExpiresAt  = "io.triage-sandbox.expires-at"
)

// ScratchHome and ScratchTmp are where a container-style backend puts the
// fresh per-run HOME and TMPDIR.
const (
	ScratchHome = "/home/sandbox"
	ScratchTmp  = "/tmp"
)
