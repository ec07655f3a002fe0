// Package profiles holds triage-sandbox's built-in defaults as data: the
// credential paths nobody may read, the environment allow-lists, the writable
// defaults and limits per role, the capability names. The policy package
// applies them.
package profiles

import "time"

// CredentialPaths are unreadable in every role. "~" is the caller's home.
// ai-triager's SECRET_PATHS plus our own state, and every store of
// credentials (or of what was typed: histories) known to live in a home
// directory. Outside a mount they are unreadable anyway; under one (the
// workspace is the home, or the checkout is) the policy masks each of them.
func CredentialPaths() []string {
	return []string{
		// triage-sandbox and ai-triager themselves.
		"~/.config/ai-triager", "~/.config/triage-sandbox", "~/.local/state/triage-sandbox",
		// Keys, keychains and password managers.
		"~/.ssh", "~/.gnupg", "~/.password-store", "~/.local/share/keyrings", "~/.local/share/kwalletd",
		"~/Library/Keychains", "/Library/Keychains", "~/.config/1Password", "~/.config/op",
		"~/.config/Bitwarden", "~/.config/Bitwarden CLI", "~/.config/sops", "~/.config/age", "~/.vault-token",
		// Git and forges.
		"~/.git-credentials", "~/.config/git/credentials", "~/.config/gh", "~/.config/hub",
		"~/.config/glab-cli", "~/.netrc", "~/_netrc",
		// Package registries: npm, yarn, pip, cargo, gem, maven, gradle, composer, nuget, bundler.
		"~/.npmrc", "~/.yarnrc", "~/.yarnrc.yml", "~/.config/yarn", "~/.pypirc", "~/.pip/pip.conf",
		"~/.config/pip", "~/.config/pypoetry", "~/.cargo/credentials", "~/.cargo/credentials.toml",
		"~/.gem/credentials", "~/.local/share/gem/credentials", "~/.m2/settings.xml",
		"~/.m2/settings-security.xml", "~/.gradle/gradle.properties", "~/.composer/auth.json",
		"~/.config/composer/auth.json", "~/.nuget/NuGet/NuGet.Config", "~/.bundle/config",
		// Containers and clusters.
		"~/.docker", "~/.config/containers/auth.json", "~/.kube", "~/.config/helm", "~/.minikube",
		// Cloud and infrastructure CLIs.
		"~/.aws", "~/.azure", "~/.config/gcloud", "~/.oci", "~/.config/doctl", "~/.terraform.d",
		"~/.terraformrc", "~/.s3cfg", "~/.boto", "~/.config/rclone", "~/.databrickscfg", "~/.fly",
		// Databases.
		"~/.pgpass", "~/.my.cnf", "~/.mylogin.cnf",
		// AI agents and model hubs.
		"~/.claude", "~/.claude.json", "~/.config/anthropic", "~/.config/openai", "~/.codex", "~/.gemini",
		"~/.config/github-copilot", "~/.cache/huggingface/token", "~/.huggingface/token",
		// Browser profiles (cookies, saved passwords).
		"~/.mozilla", "~/.config/google-chrome", "~/.config/chromium", "~/.config/BraveSoftware",
		"~/.config/microsoft-edge", "~/snap/firefox", "~/snap/chromium",
		"~/Library/Application Support/Google/Chrome", "~/Library/Application Support/Firefox",
		"~/Library/Application Support/BraveSoftware", "~/Library/Cookies",
		// Shell and REPL histories: what was typed, tokens included.
		"~/.bash_history", "~/.zsh_history", "~/.history", "~/.sh_history", "~/.local/share/fish/fish_history",
		"~/.python_history", "~/.node_repl_history", "~/.irb_history", "~/.psql_history",
		"~/.mysql_history", "~/.sqlite_history", "~/.rediscli_history", "~/.lesshst", "~/.viminfo",
		"~/.local/state/nvim/shada",
	}
}

// ToolchainCredentialPaths are system-wide tool configs that can hold a
// registry or forge token, in the directories a host toolchain or a host
// root exposes (npm's globalconfig is $PREFIX/etc/npmrc and `npm config
// set -g` writes it; pip reads sys.prefix/pip.conf; git its system
// gitconfig, which may carry a credential helper or an extraheader).
// Unreadable whatever `secrets` says; masked (an empty file) where a
// mount or host root would expose one. Not listed: configs that a tool
// refuses to read empty (Maven's settings.xml).
func ToolchainCredentialPaths() []string {
	return []string{
		// npm and yarn: $PREFIX/etc/npmrc, npm's builtin npmrc.
		"/etc/npmrc", "/usr/etc/npmrc", "/usr/local/etc/npmrc",
		"/usr/lib/node_modules/npm/npmrc", "/usr/local/lib/node_modules/npm/npmrc",
		"/etc/yarnrc", "/usr/etc/yarnrc", "/usr/local/etc/yarnrc",
		// pip: the global and the site (sys.prefix) config.
		"/etc/pip.conf", "/etc/xdg/pip/pip.conf", "/usr/pip.conf", "/usr/local/pip.conf",
		// netrc-likes and git's system config and store.
		"/etc/netrc", "/usr/etc/netrc", "/usr/local/etc/netrc",
		"/etc/gitconfig", "/usr/etc/gitconfig", "/usr/local/etc/gitconfig",
		"/etc/git-credentials", "/usr/local/etc/git-credentials",
		// cargo, gem and bundler homes that images put under /usr/local.
		"/usr/local/cargo/credentials", "/usr/local/cargo/credentials.toml",
		"/etc/gemrc", "/usr/local/etc/gemrc", "/usr/local/bundle/config",
	}
}

// ToolPrefixCredentialPaths are the same configs relative to a tool's
// prefix: npm's globalconfig is $PREFIX/etc/npmrc for any node (a
// read_only = ["/opt/node"], an nvm install), pip's site config is
// sys.prefix/pip.conf for any python environment, a cargo home keeps its
// credentials at its top. Masked under every read-only mount that is not
// the workspace or the checkout (whose files are the project's).
func ToolPrefixCredentialPaths() []string {
	return []string{"etc/npmrc", "etc/yarnrc", "etc/gitconfig", "etc/netrc", "etc/pip.conf", "pip.conf",
		"lib/node_modules/npm/npmrc", "credentials", "credentials.toml"}
}

// RuntimeSockets are container-runtime control sockets: reaching one is root
// on the host, so they are unreadable whatever `secrets` says. (Any other
// unix socket under a mount is masked too: the policy looks for them.)
func RuntimeSockets() []string {
	return []string{
		"/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock",
		"/run/podman/podman.sock", "/run/crio/crio.sock", "~/.docker/run/docker.sock",
		"~/.colima/default/docker.sock", "~/.rd/docker.sock", "~/.orbstack/run/docker.sock",
		"~/.local/share/containers/podman/machine/podman.sock",
	}
}

// EnvAllow is the environment allow-list per role; entries may be shell wildcards.
func EnvAllow(role Role) []string {
	if role == RoleAgent {
		return []string{"PATH", "HOME", "LANG", "LC_*"}
	}
	return []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TMPDIR", "TZ",
		"LANG", "LC_*", "PLAYWRIGHT_BROWSERS_PATH", "TRIAGE_*"}
}

// Writable is the default writable list per role, relative to the workspace root.
func Writable(role Role) []string {
	if role == RoleAgent {
		return []string{"issues", "repros", "NOTES.md", "INDEX.md", ".triage"}
	}
	return []string{"repros"}
}

// Limits are the resource defaults per role.
type Limits struct {
	Timeout time.Duration
	Memory  int64 // bytes; swap is set equal so there is none
	CPUs    float64
	Pids    int64
	NoFile  int64
	// FileSize bounds every file a command writes (RLIMIT_FSIZE): a huge
	// or sparse file in an output ends in EFBIG, not on the host's disk.
	FileSize  int64
	TmpfsSize int64 // each scratch tmpfs (HOME, TMPDIR)
	// WritableSize and WritableInodes bound each staged writable path (and
	// each directory holding writable files): a run cannot fill the host's
	// disk or its inodes through its outputs.
	WritableSize   int64
	WritableInodes int64
	ShmSize        int64
	// Core is the core-dump size limit: 0, so a crash never writes memory
	// (secrets included) to disk.
	Core int64
	// OOMScoreAdj makes the sandbox the kernel's first choice when memory runs out.
	OOMScoreAdj int
}

// ReproducerTimeout is a reproducer's default timeout. Every reproducer is
// a cold build: spf13/cobra's `go test ./...` took 118-152 s on 2 cores
// and a one-file Go module 70-110 s under load, so the former 120 s
// killed ordinary first runs. 300 s (the agent's) covers them about
// twice over; what it costs is a hung reproducer holding its 2 CPUs and
// 2 GiB for 5 minutes instead of 2, which a triage run can afford once.
const ReproducerTimeout = 300 * time.Second

// DefaultLimits returns the per-role resource defaults. Reproducers get more
// room because headless Chromium needs it (pids, /dev/shm, memory).
func DefaultLimits(role Role) Limits {
	const mib = 1 << 20
	if role == RoleAgent {
		return Limits{Timeout: 300 * time.Second, Memory: 1024 * mib, CPUs: 1, Pids: 512,
			NoFile: 4096, FileSize: 1024 * mib, TmpfsSize: 256 * mib, ShmSize: 64 * mib, OOMScoreAdj: OOMScoreAdj,
			WritableSize: 256 * mib, WritableInodes: 32768}
	}
	return Limits{Timeout: ReproducerTimeout, Memory: 2048 * mib, CPUs: 2, Pids: 1024,
		NoFile: 4096, FileSize: 1024 * mib, TmpfsSize: 512 * mib, ShmSize: 256 * mib, OOMScoreAdj: OOMScoreAdj,
		WritableSize: 512 * mib, WritableInodes: 32768}
}

// Output defaults: what is shown of a run's output (head + tail, per
// stream) and the hard ceiling past which the command is stopped.
const (
	DefaultOutputLimit   = 64 << 10
	DefaultOutputCeiling = 1 << 30
)

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

// Capability names something a backend can enforce. The names are the
// values `[sandbox] accept_weaker` takes.
type Capability string

// The capabilities a policy may require.
const (
	CapOwnLoopback    Capability = "own_loopback"
	CapOutboundNAT    Capability = "outbound_nat"
	CapPidNamespace   Capability = "pid_namespace"
	CapMemoryLimit    Capability = "memory_limit"
	CapPidsLimit      Capability = "pids_limit"
	CapCPULimit       Capability = "cpu_limit"
	CapUIDSwitch      Capability = "uid_switch"
	CapMaskUnderMount Capability = "mask_under_mount"
	CapImageRoot      Capability = "image_root"
	// CapBoundedWrites: writable paths are bounded staged copies (size,
	// inodes, nosuid, nodev), written back to the host by triage-sandbox.
	CapBoundedWrites Capability = "bounded_writes"
	CapHostRoot      Capability = "host_root"
	// CapSyscallFilter is a Linux mechanism, not a policy requirement:
	// no capabilities, no_new_privs and a seccomp filter. Selftest checks
	// of those mechanisms need it.
	CapSyscallFilter Capability = "syscall_filter"
	// CapEgressProxy: a network allow-list is rendered as the host side's
	// proxy as the only way out: its socket bound into the sandbox's own
	// loopback and forwarded to by the holder, or (seatbelt, sharing the
	// host's loopback) its port there alone, asking for a per-run secret.
	// Not a weaker mode anyone may accept (it is not in Capabilities):
	// without it the list is refused.
	CapEgressProxy Capability = "egress_proxy"
	// CapHostToolchain: the host's own programs and libraries (its /usr and
	// kin) can be mounted read-only over an image's root, as toolchain =
	// "host" asks. A backend whose sandboxes run on other machines (a
	// cluster's nodes) lacks it: there the default toolchain is the
	// image's. Not a weaker mode: a config that asks for the host's gets
	// a refusal naming the key.
	CapHostToolchain Capability = "host_toolchain"
)

var capabilityMeanings = map[Capability]string{
	CapOwnLoopback:    "a network namespace of its own: only its own loopback, the host's listeners unreachable",
	CapOutboundNAT:    "network on through a namespace of its own with a route out",
	CapPidNamespace:   "a process namespace of its own: host processes invisible and unsignalable",
	CapMemoryLimit:    "a memory limit with no swap",
	CapPidsLimit:      "a process-count limit",
	CapCPULimit:       "a CPU limit",
	CapUIDSwitch:      "running as another uid than the caller",
	CapMaskUnderMount: "hiding credential paths that lie under a readable mount",
	CapImageRoot:      "an image as the root filesystem",
	CapBoundedWrites:  "writable paths bounded in size and inodes (staged copies, nosuid, nodev) and copied back safely",
	CapHostRoot:       "the host's root filesystem, readable only through an allow-list of roots",
	CapSyscallFilter:  "Linux capabilities dropped, no_new_privs and a seccomp filter",
	CapHostToolchain:  "the host's programs and libraries mounted read-only over the image's (toolchain = \"host\")",
	CapEgressProxy:    "a network allow-list: only the host's proxy, reached through a socket bound into its own loopback-only namespace (or, on Seatbelt, the proxy's port on the host's loopback alone)",
}

// Capabilities lists every capability name.
func Capabilities() []Capability {
	return []Capability{CapOwnLoopback, CapOutboundNAT, CapPidNamespace, CapMemoryLimit, CapPidsLimit,
		CapCPULimit, CapUIDSwitch, CapMaskUnderMount, CapImageRoot, CapHostRoot, CapBoundedWrites}
}

// provenAtStart are the capabilities a backend declares only because it
// proves them when it starts a sandbox (kubernetes: own_loopback, by its
// network check; pids_limit, by reading its node's podPidsLimit), keyed
// by backend name. Accepting one as weaker skips the
// proof, so it is then reported as weakened like a missing one.
var provenAtStart = map[string][]Capability{
	"kubernetes": {CapOwnLoopback, CapPidsLimit},
}

// ProvenAtStart reports whether backend proves c at each start rather than
// guaranteeing it by construction.
func ProvenAtStart(backend string, c Capability) bool {
	for _, p := range provenAtStart[backend] {
		if p == c {
			return true
		}
	}
	return false
}

// CapabilityMeaning says what a capability guarantees, for errors and reports.
func CapabilityMeaning(c Capability) string { return capabilityMeanings[c] }

// HostRoots are the system directories a host-root backend (local,
// seatbelt) may read: an allow-list, never "everything but secrets". The
// workspace, the checkout and the interpreter's environment are added per
// policy.
func HostRoots() []string {
	return []string{"/bin", "/sbin", "/usr", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
		"/opt/homebrew", "/System", "/Library/Frameworks", "/private/etc"}
}

// SystemTrees are the host directories that only the operating system and
// its package manager write: the programs and libraries of Linux's /usr
// and the unmerged /bin, /sbin and /lib*, macOS's /System and its command
// line tools. No daemon keeps a socket there (sockets live in /run, /tmp,
// /var). A host path in one of them, root's and writable by no one else
// all the way down from the tree's top, is a system directory
// (policy.Mount.System).
func SystemTrees() []string {
	return []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
		"/System", "/Library/Developer/CommandLineTools"}
}

// KernelMaskedPaths are /proc and /sys entries every container backend
// hides (Docker's default list; setting masked paths replaces it).
func KernelMaskedPaths() []string {
	return []string{
		"/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
		"/sys/firmware", "/sys/devices/virtual/powercap",
	}
}

// KernelReadonlyPaths are /proc entries container backends make read-only.
func KernelReadonlyPaths() []string {
	return []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
}

// Lifetime defaults: how long a sandbox may outlive its command's timeout
// (the TTL backstop), and SIGTERM's grace before SIGKILL.
const (
	TTLMargin = time.Minute
	KillGrace = time.Second
)

// OOMScoreAdj makes the kernel pick a sandbox before the host's own
// processes when memory runs out.
const OOMScoreAdj = 500

// ToolchainRoot is a host path an image-root sandbox reads from the host
// when the toolchain is the host's.
type ToolchainRoot struct{ Path, Why string }

// ToolchainRoots are the host's programs and what they need to run, for
// toolchain = "host": never /etc as a whole, /home or /opt.
func ToolchainRoots() []ToolchainRoot {
	return []ToolchainRoot{
		{"/usr", "programs and libraries"},
		{"/bin", "programs (not merged into /usr)"}, {"/sbin", "programs (not merged into /usr)"},
		{"/lib", "libraries (not merged into /usr)"}, {"/lib64", "the dynamic loader (not merged into /usr)"},
		{"/lib32", "libraries (not merged into /usr)"}, {"/libx32", "libraries (not merged into /usr)"},
		{"/etc/alternatives", "the links that name a program's chosen version"},
		{"/etc/ld.so.cache", "where the host's libraries are"},
	}
}

// ImagePath is PATH's system part inside an image (Debian's default).
func ImagePath() []string {
	return []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}
}

// ClosedImageDirs are directories images keep closed to other users (root's
// home is 0700): a host path mounted below one needs the directory made
// searchable inside.
func ClosedImageDirs() []string { return []string{"/root"} }

// ToolConfigNames make a tool run code when a person or a program later
// opens a directory holding them (git hooks and fsmonitor, direnv, editor
// tasks, devcontainers, package-manager scripts): a run may not leave them
// in its outputs unless the config allows it there.
func ToolConfigNames() []string {
	return []string{".git", ".hg", ".envrc", ".vscode", ".idea", ".devcontainer", ".npmrc", ".yarnrc.yml"}
}

// How the kubernetes backend makes sandboxes ([sandbox] kubernetes_api).
const (
	// KubernetesPods: each sandbox a pod the backend creates (the default).
	KubernetesPods = "pods"
	// KubernetesAgentSandbox: the policy a SandboxTemplate, each sandbox a
	// SandboxClaim that the agent-sandbox controller (sigs.k8s.io/agent-sandbox)
	// turns into a Sandbox and its pod.
	KubernetesAgentSandbox = "agent-sandbox"
)

// KubernetesAPIs are the values of [sandbox] kubernetes_api.
var KubernetesAPIs = []string{KubernetesPods, KubernetesAgentSandbox}
