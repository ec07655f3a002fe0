package config

import (
	"maps"
	"slices"

	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// keySpec is one key of a table whose every key is known ([sandbox], a
// per-role table, [sandbox.guard]): how its value is read and checked, where
// it is stored in S, how a per-role table overrides it, and what it means.
// The validator, Resolve and the README's key table all follow the lists
// below (keys_test.go checks the struct and the README against them), so a
// new key is one line here plus the code that uses its value.
type keySpec[S any] struct {
	name string
	// doc is what the key means, exactly as the README's key table states it.
	doc string
	// example is a valid TOML value for the key, for the tests.
	example string
	// read checks v (at path p) and stores it in s; a bad value leaves the
	// field unset and adds a problem.
	read func(c *checker, p []string, v any, s *S)
	// merge sets dst's field to a copy of over's when it is set there, else
	// of base's: the shallow override of a per-role table.
	merge func(dst, over, base *S)
	// field returns the address of the field in s (for the tests).
	field func(s *S) any
}

// parser reads one value; the zero T (nil) means it was not accepted.
type parser[T any] func(c *checker, p []string, v any) T

// scalar is a key stored as a pointer; nil is unset.
func scalar[S, T any](name, doc, example string, at func(*S) **T, parse parser[*T]) keySpec[S] {
	return keySpec[S]{
		name: name, doc: doc, example: example,
		read:  func(c *checker, p []string, v any, s *S) { *at(s) = parse(c, p, v) },
		merge: func(dst, over, base *S) { *at(dst) = pick(*at(over), *at(base)) },
		field: func(s *S) any { return at(s) },
	}
}

// list is a key stored as a slice; nil is unset, an empty list is set (and
// overrides [sandbox] with nothing).
func list[S, T any](name, doc, example string, at func(*S) *[]T, parse parser[[]T]) keySpec[S] {
	return keySpec[S]{
		name: name, doc: doc, example: example,
		read:  func(c *checker, p []string, v any, s *S) { *at(s) = parse(c, p, v) },
		merge: func(dst, over, base *S) { *at(dst) = pickSlice(*at(over), *at(base)) },
		field: func(s *S) any { return at(s) },
	}
}

// table is a key stored as a map; nil is unset. A role's table replaces
// [sandbox]'s whole, it is not merged entry by entry.
func table[S any](name, doc, example string, at func(*S) *map[string]string, parse parser[map[string]string]) keySpec[S] {
	return keySpec[S]{
		name: name, doc: doc, example: example,
		read:  func(c *checker, p []string, v any, s *S) { *at(s) = parse(c, p, v) },
		merge: func(dst, over, base *S) { *at(dst) = pickMap(*at(over), *at(base)) },
		field: func(s *S) any { return at(s) },
	}
}

// maxPool bounds [sandbox] pool: each warm sandbox holds its memory.
const maxPool = 16

// Bounds that catch a forgotten unit or a typo at load time, before a
// runtime refuses the value with a message that names no key.
const (
	// minMemory is Docker's own minimum ("Minimum memory limit allowed is
	// 6MB"); runc accepts less, but nothing runs in it.
	minMemory = 6 << 20
	// A pids limit below minPids leaves no room for the sandbox's own
	// holder and supervisor beside a shell; maxPids is the kernel's
	// largest pid_max.
	minPids = 8
	maxPids = 1 << 22
)

// sandboxKeys are the keys of [sandbox] and of each per-role table, in the
// order a problem lists them.
var sandboxKeys = []keySpec[Sandbox]{
	scalar("backend", `the backend that runs commands (see "Which backend")`, `"docker"`,
		func(s *Sandbox) **string { return &s.Backend }, (*checker).backend),
	scalar("network", "`false` = loopback only; `true` = network on; a list of hosts and presets (`[\"python\", \"files.example.org:443\"]`) = only those, through the host's proxy (see \"Network\")", `["python", "files.example.org:443"]`,
		func(s *Sandbox) **Network { return &s.Network }, (*checker).network),
	scalar("image", "docker image with the project's environment at the same paths", `"img:1"`,
		func(s *Sandbox) **string { return &s.Image }, stringWhere(checkImage)),
	list("env", "extra variables to pass; shell wildcards allowed (`PIXI_*`)", `["PIXI_*"]`,
		func(s *Sandbox) *[]string { return &s.Env }, stringsWhere(checkEnvPattern)),
	list("secrets", "replaces the unreadable-path list (runtime sockets stay unreadable regardless)", `["~/.ssh"]`,
		func(s *Sandbox) *[]string { return &s.Secrets }, stringsWhere(checkNonEmpty)),
	list("writable", "writable paths, relative to the workspace root", `["out"]`,
		func(s *Sandbox) *[]string { return &s.Writable }, stringsWhere(checkRelative)),
	scalar("allow_all", "no isolation, full environment, guard off; every report warns and the selftest fails", `true`,
		func(s *Sandbox) **bool { return &s.AllowAll }, (*checker).boolean),
	table("set_env", "fixed variables set inside, e.g. `{ LLMFORMAT = \"1\" }`", `{ LLMFORMAT = "1" }`,
		func(s *Sandbox) *map[string]string { return &s.SetEnv }, (*checker).setEnv),
	scalar("timeout", "role timeout: seconds or a duration (`\"5m\"`); overrides `[repro] timeout`", `"30s"`,
		func(s *Sandbox) **int { return &s.Timeout }, (*checker).timeout),
	scalar("memory", "memory limit (`\"2g\"`, `\"512m\"`, bytes); swap is set equal, so there is none", `"2g"`,
		func(s *Sandbox) **int64 { return &s.Memory }, sizeAtLeast(minMemory, "2g")),
	// Runtimes apply no CPU quota below 0.01 (dockerd refuses it, runc
	// reads a zero quota as no limit).
	scalar("cpus", "CPU limit", `1.5`,
		func(s *Sandbox) **float64 { return &s.CPUs }, numberIn(0.01, 4096, "e.g. cpus = 1.5")),
	scalar("pids", "process (task) limit", `256`,
		func(s *Sandbox) **int64 { return &s.Pids }, intIn(minPids, maxPids, "", "e.g. pids = 256")),
	scalar("tmpfs_size", "size of each scratch tmpfs (HOME, TMPDIR)", `"256m"`,
		func(s *Sandbox) **int64 { return &s.TmpfsSize }, sizeAtLeast(1<<20, "256m")),
	scalar("shm_size", "`/dev/shm` size", `"64m"`,
		func(s *Sandbox) **int64 { return &s.ShmSize }, sizeAtLeast(64<<10, "64m")),
	scalar("file_size", "largest file a command may write (`RLIMIT_FSIZE`; a bigger or sparse one ends in EFBIG)", `"1g"`,
		func(s *Sandbox) **int64 { return &s.FileSize }, sizeAtLeast(1<<20, "1g")),
	scalar("writable_size", "bytes of each staged writable path (and of a directory holding writable files)", `"256m"`,
		func(s *Sandbox) **int64 { return &s.WritableSize }, sizeAtLeast(1<<20, "256m")),
	scalar("writable_inodes", "files in each staged writable path (and in a directory holding writable files)", `32768`,
		func(s *Sandbox) **int64 { return &s.WritableInodes }, intIn(64, 1<<24, "", "e.g. writable_inodes = 32768")),
	scalar("runtime", "docker: the daemon's runtime, e.g. `runsc`; oci: `runc`, `crun` or `runsc`; kubernetes: the pod's RuntimeClass, e.g. `gvisor`", `"runsc"`,
		func(s *Sandbox) **string { return &s.Runtime }, stringWhere(anyString)),
	scalar("namespace", "kubernetes: the namespace sandboxes run in", `"triage"`,
		func(s *Sandbox) **string { return &s.Namespace }, stringWhere(checkNamespace)),
	scalar("kubernetes_api", "kubernetes: `\"pods\"` makes each sandbox a pod of its own; `\"agent-sandbox\"` makes the policy a `SandboxTemplate` and each sandbox a `SandboxClaim` that the cluster's agent-sandbox controller fills (a reproducer `pool` becomes its `SandboxWarmPool`)", `"agent-sandbox"`,
		func(s *Sandbox) **string { return &s.KubernetesAPI }, stringWhere(oneOf(profiles.KubernetesAPIs...))),
	scalar("user", "`uid:gid` inside when triage-sandbox runs as root (never 0)", `"1000:1000"`,
		func(s *Sandbox) **string { return &s.User }, stringWhere(checkUserKey)),
	scalar("output_limit", "bytes of each stream shown (head + tail)", `"64k"`,
		func(s *Sandbox) **int64 { return &s.OutputLimit }, sizeAtLeast(1<<10, "64k")),
	scalar("output_ceiling", "a command that prints more than this is stopped (exit 137, `output_ceiling`)", `"1g"`,
		func(s *Sandbox) **int64 { return &s.OutputCeiling }, sizeAtLeast(64<<10, "1g")),
	list("deny", "extra gate patterns (ai-triager's fnmatch globs, e.g. `\"gh issue close*\"`) matched against each parsed, normalised command: a match denies", `["gh issue close*"]`,
		func(s *Sandbox) *[]string { return &s.Deny }, stringsWhere(checkNonEmpty)),
	list("confirm", "extra gate patterns, as `deny`: a match asks the operator", `["git push*"]`,
		func(s *Sandbox) *[]string { return &s.Confirm }, stringsWhere(checkNonEmpty)),
	list("gate_disable", "default gate rules (see `triage-sandbox check`, below) that do not apply", `["rule"]`,
		func(s *Sandbox) *[]string { return &s.GateDisable }, stringsWhere(checkNonEmpty)),
	list("gate_confirm", "default gate rules that ask the operator instead of denying", `["rule"]`,
		func(s *Sandbox) *[]string { return &s.GateConfirm }, stringsWhere(checkNonEmpty)),
	scalar("allow_dynamic", "the agent role may run commands the gate cannot judge statically (`eval`, a program name from a variable)", `true`,
		func(s *Sandbox) **bool { return &s.AllowDynamic }, (*checker).boolean),
	scalar("audit_log", "JSONL audit log, relative to the workspace root; may not lie in a writable path", `".triage/audit.jsonl"`,
		func(s *Sandbox) **string { return &s.AuditLog }, stringWhere(anyString)),
	list("accept_weaker", "requirements the backend may lack without refusal (e.g. `[\"own_loopback\"]` for a backend that shares the host's loopback); see \"Capabilities\"", `["own_loopback"]`,
		func(s *Sandbox) *[]profiles.Capability { return &s.AcceptWeaker }, capabilities),
	list("allow_tool_config", "writable paths where a run may leave `.git`, `.envrc`, editor settings (see \"What a run leaves in its outputs\")", `["issues"]`,
		func(s *Sandbox) *[]string { return &s.AllowToolConfig }, stringsWhere(checkRelative)),
	list("read_only", "extra host directories mounted read-only at the same path (absolute, `~/…` or relative to the workspace root); one inside an unreadable path is refused", `["~/.cache/pip"]`,
		func(s *Sandbox) *[]string { return &s.ReadOnly }, stringsWhere(checkNonEmpty)),
	scalar("toolchain", "docker and oci: `\"host\"` mounts the host's `/usr` read-only over the image, so the project's own node, go, make, compilers run; `\"image\"` uses only the image's programs; the default is `\"host\"` with the default image and `\"image\"` when `image` names one or the backend cannot mount the host's (kubernetes: the nodes are other machines; `\"host\"` is refused there)", `"image"`,
		func(s *Sandbox) **string { return &s.Toolchain }, stringWhere(oneOf("host", "image"))),
	scalar("checkout_writes", "`\"discard\"` (default): commands may write under `[project] checkout` (coverage, caches, build output) and the writes are thrown away with the sandbox, bounded like `writable_size`; the host's checkout never changes; `\"refuse\"`: the checkout is read-only", `"refuse"`,
		func(s *Sandbox) **string { return &s.CheckoutWrites }, stringWhere(oneOf("discard", "refuse"))),
	scalar("pool", "(reproducer) keep this many started sandboxes ready, 1–16; each runs exactly one command", `2`,
		func(s *Sandbox) **int64 { return &s.Pool }, intIn(1, maxPool, "", "e.g. pool = 2 keeps two reproducer sandboxes ready")),
	scalar("warm_idle", "an unused session or pool ends after this long: seconds or a duration (`\"10m\"`), 10–86400 s", `"10m"`,
		func(s *Sandbox) **int { return &s.WarmIdle }, secondsIn(10, 86400, "must be between 10 and 86400 seconds")),
	{
		name:    "broker",
		doc:     "secrets brokered through the network proxy, off by default: `[sandbox.reproducer.broker.GH_TOKEN]` with `hosts = [\"api.github.com\"]` (each on the `network` list) and `methods` (default `[\"GET\", \"HEAD\"]`); the sandbox gets a placeholder, the proxy puts the value from triage-sandbox's own environment in only on those requests (see \"Network\")",
		example: `{ GH_TOKEN = { hosts = ["api.github.com"] } }`,
		read:    func(c *checker, p []string, v any, s *Sandbox) { s.Broker = c.brokers(p, v) },
		merge: func(dst, over, base *Sandbox) {
			src := over.Broker
			if src == nil {
				src = base.Broker
			}
			if src != nil {
				dst.Broker = make(map[string]Broker, len(src))
				for k, b := range src {
					dst.Broker[k] = Broker{Hosts: slices.Clone(b.Hosts), Methods: slices.Clone(b.Methods)}
				}
			}
		},
		field: func(s *Sandbox) any { return &s.Broker },
	},
}

// guardKeys are the keys of [sandbox.guard], in the order a problem lists
// them. The guard has no per-role tables; merge is unused.
var guardKeys = []keySpec[Guard]{
	scalar("enabled", "ask a decision model about each command before it runs (see \"The command gate\")", `true`,
		func(g *Guard) **bool { return &g.Enabled }, (*checker).boolean),
	scalar("model", "the model's name, sent with each question", `"jev:jev-latest"`,
		func(g *Guard) **string { return &g.Model }, stringWhere(anyString)),
	scalar("min_safe", "a command runs only if the model's safe score is at least this", `0.5`,
		func(g *Guard) **float64 { return &g.MinSafe }, numberIn(0, 1, "")),
	scalar("max_risk", "a command runs only if every risk score (exfiltration, destructive, injection) is at most this", `0.7`,
		func(g *Guard) **float64 { return &g.MaxRisk }, numberIn(0, 1, "")),
	scalar("url", "the model's OpenAI-compatible endpoint, e.g. `http://127.0.0.1:8080/v1`", `"http://127.0.0.1:8080/v1"`,
		func(g *Guard) **string { return &g.URL }, stringWhere(anyString)),
	scalar("timeout", "how long to wait for the model's answer: seconds or a duration (`\"1m\"`)", `60`,
		func(g *Guard) **int { return &g.Timeout }, (*checker).timeout),
	list("command", "instead of `url`: an argv that reads the request JSON on stdin and prints the scores JSON", `["judge", "--json"]`,
		func(g *Guard) *[]string { return &g.Command }, stringsWhere(checkNonEmpty)),
	scalar("api_key_env", "the variable holding the key for `url`", `"JUDGE_KEY"`,
		func(g *Guard) **string { return &g.APIKeyEnv }, stringWhere(anyString)),
}

// Bounds of [sandbox.mcp]: a session pins its sandbox's memory for up
// to warm_idle after its last command, so the most is kept small.
const (
	maxMCPSessions = 64
	maxMCPStarting = 16
	maxMCPRuns     = 16
)

// mcpKeys are the keys of [sandbox.mcp] (the MCP server's own bounds);
// it has no per-role tables, merge is unused.
var mcpKeys = []keySpec[MCP]{
	scalar("max_sessions", "`triage-sandbox mcp`: named sessions alive at once, 1–64; a new name past it is refused, naming the live ones and `end_session`", `2`,
		func(m *MCP) **int64 { return &m.MaxSessions }, intIn(1, maxMCPSessions, "", "e.g. max_sessions = 4")),
	scalar("max_starting", "`triage-sandbox mcp`: sandboxes being started at once (a session's first command, a run without a session), 1–16; more wait their turn", `1`,
		func(m *MCP) **int64 { return &m.MaxStarting }, intIn(1, maxMCPStarting, "", "e.g. max_starting = 2")),
	scalar("max_runs", "`triage-sandbox mcp`: runs without a session at once (each a sandbox of its own for its command, e.g. a reproducer's), 1–16; more wait their turn", `1`,
		func(m *MCP) **int64 { return &m.MaxRuns }, intIn(1, maxMCPRuns, "", "e.g. max_runs = 2")),
}

// sandboxTables are the tables [sandbox] may hold besides its keys.
var sandboxTables = []string{string(profiles.RoleAgent), string(profiles.RoleReproducer), "guard", "mcp"}

// keyNames lists the names of keys, in order.
func keyNames[S any](keys []keySpec[S]) []string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.name
	}
	return names
}

// lookup returns the key called name.
func lookup[S any](keys []keySpec[S], name string) (keySpec[S], bool) {
	i := slices.IndexFunc(keys, func(k keySpec[S]) bool { return k.name == name })
	if i < 0 {
		return keySpec[S]{}, false
	}
	return keys[i], true
}

// pick returns a copy of the override when set, else of the base.
func pick[T any](override, base *T) *T {
	p := override
	if p == nil {
		p = base
	}
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// pickSlice treats a nil slice as unset; an empty one is set and overrides.
func pickSlice[T any](override, base []T) []T {
	if override != nil {
		return slices.Clone(override)
	}
	return slices.Clone(base)
}

func pickMap(override, base map[string]string) map[string]string {
	if override != nil {
		return maps.Clone(override)
	}
	return maps.Clone(base)
}
