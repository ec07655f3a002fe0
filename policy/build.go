package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/egress/allow"
	"github.com/triage-sandbox/triage-sandbox/gitconfig"
	"github.com/triage-sandbox/triage-sandbox/hostread"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// Options are per-invocation choices that are not in the config file.
type Options struct {
	// Backend overrides the config (the --backend flag); "" means use
	// TRIAGE_SANDBOX, then the config, then the OS default.
	Backend string
	// Workdir is the directory the command starts in; "" means the caller's
	// current directory when it is visible inside, else the workspace root.
	Workdir string
	// Session runs the command in the named agent session's sandbox.
	Session string
	// Capabilities are what the chosen backend enforces; they decide the
	// readable base (an image or host roots) and what must be accepted as
	// weaker. nil means an image-root backend whose capabilities are
	// checked later (Enforce runs again before every start).
	Capabilities []Capability
}

// Build compiles cfg for role on host. It only reads the filesystem;
// what a run must create on the host is HostPreparation's list, which the
// layer that starts the run prepares.
func Build(cfg *config.File, role profiles.Role, host Host, opts Options) (*Policy, error) {
	if err := role.Validate(); err != nil {
		return nil, err
	}
	b, err := newBuilder(cfg, role, host, opts)
	if err != nil {
		return nil, err
	}
	// The order matters: each step reads what the ones before decided.
	steps := []func() error{b.readable, b.network, b.resources, b.toolchain, b.confine, b.choices, b.reach, b.environment}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	b.p.Inputs = b.written.list()
	return b.p, nil
}

// builder carries one Build through its steps.
type builder struct {
	cfg  *config.File
	role profiles.Role
	host Host
	opts Options
	sb   config.Sandbox
	root string
	p    *Policy
	// written is what any sandbox could have written: every policy input
	// is checked against it (sources.go).
	written   sandboxWritten
	pythonEnv string
	deps      goDeps
	gitReplay []gitconfig.Entry
}

func newBuilder(cfg *config.File, role profiles.Role, host Host, opts Options) (*builder, error) {
	rd := host.Reads
	sb := cfg.Resolve(role)
	root, err := canonicalDir(rd, cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("workspace root: %w", err)
	}
	p := &Policy{Role: role, WorkspaceRoot: root, Config: cfg.Path}
	p.Warnings = append(p.Warnings, cfg.Warnings...)
	p.Backend = chooseBackend(opts.Backend, host, sb)
	p.AllowAll = sb.AllowAll != nil && *sb.AllowAll
	if p.AllowAll {
		p.Warnings = append(p.Warnings, "allow_all = true: NO isolation, the full environment (secrets included) passes and the guard is off")
	}
	return &builder{cfg: cfg, role: role, host: host, opts: opts, sb: sb, root: root, p: p,
		written: writtenBySandboxes(host.Reads, cfg, root)}, nil
}

// readable decides the unreadable paths, then the mounts (a mount inside
// an unreadable path is refused) and the Go dependencies they need.
func (b *builder) readable() error {
	p := b.p
	p.Unreadable = unreadableList(b.sb, b.host)
	var err error
	if b.pythonEnv, err = mounts(p, b.cfg, b.sb, b.role, b.host, b.written); err != nil {
		return err
	}
	// With the network on, go fetches what it lacks into the sandbox's
	// own module cache, as on the host: nothing to mount or switch off.
	if n, _ := network(false, b.sb); !p.AllowAll && n.LoopbackOnly() {
		if b.deps, err = goDependencies(p, projectDir(p), b.host, b.written); err != nil {
			return err
		}
		p.Mounts = dedupeMounts(append(p.Mounts, b.deps.mounts...))
		p.Warnings = append(p.Warnings, b.deps.warnings...)
	}
	return nil
}

// network decides the network mode, its config key and the brokers.
func (b *builder) network() error {
	p, cfg := b.p, b.cfg
	var err error
	if p.Network, err = network(p.AllowAll, b.sb); err != nil {
		return fmt.Errorf("%s: %s: %w", configName(cfg), cfg.NetworkKey(b.role), err)
	}
	p.Network.Key = cfg.NetworkKey(b.role)
	if p.Network.Brokers, err = brokers(cfg, b.sb, b.role, b.host, p.Network); err != nil {
		return fmt.Errorf("%s: %w", configName(cfg), err)
	}
	return nil
}

// resources decides the limits, scratch, lifetime, identity and base.
func (b *builder) resources() error {
	rd := b.host.Reads
	p := b.p
	p.Limits = limits(b.cfg, b.sb, b.role)
	key, set := b.cfg.TimeoutKey(b.role)
	p.TimeoutKey, p.TimeoutDefault = key, !set
	p.Scratch = Scratch{Size: p.Limits.TmpfsSize, HomeMode: 0o700, TmpMode: 0o1777, Exec: true, NoSuid: true, NoDev: true}
	p.Lifetime = Lifetime{Lifeline: true, TTLMargin: profiles.TTLMargin, KillGrace: profiles.KillGrace}
	var err error
	if p.User, err = identity(b.sb, b.host, b.root, discardedCheckout(p.Mounts)); err != nil {
		return err
	}
	p.Base = base(rd, b.sb, b.opts.Capabilities)
	joinSystemMounts(p)
	return nil
}

// toolchain mounts the host's toolchain over an image where the config
// asks for it and the backend can give it.
func (b *builder) toolchain() error {
	rd := b.host.Reads
	p, caps := b.p, b.opts.Capabilities
	b.remoteDefaults()
	if p.Base.Kind != BaseImage || p.AllowAll || !hostToolchain(b.sb, caps) {
		return nil
	}
	if caps != nil && !slices.Contains(caps, profiles.CapHostToolchain) {
		return fmt.Errorf("%s: toolchain = \"host\": the %s backend cannot give its sandboxes the host's programs and libraries (%s: its sandboxes run on other machines); set toolchain = \"image\" (the default there), or use the docker or oci backend",
			configName(b.cfg), p.Backend, profiles.CapHostToolchain)
	}
	tc := toolchainMounts(rd)
	p.Mounts = dedupeMounts(append(p.Mounts, tc...))
	// Added after maskUnderMounts: an unreadable path inside them
	// (a tool config holding a token) is masked here.
	p.Masked = dedupe(append(p.Masked, maskedUnder(p.Unreadable, tc)...))
	return nil
}

// confine checks the mounts against the unreadable paths, then decides
// the git views, masks, staging and traversable directories.
func (b *builder) confine() error {
	rd := b.host.Reads
	p := b.p
	if err := mountsOutOfUnreadable(b.cfg, p); err != nil {
		return err
	}
	if !p.AllowAll {
		var err error
		if b.gitReplay, err = gitViews(rd, p); err != nil {
			return err
		}
		// After the base and the host toolchain: both expose tool configs.
		toolPrefixCredentials(p)
	}
	maskUnderMounts(p, b.host)
	if !p.AllowAll {
		if err := stageWritable(rd, p); err != nil {
			return fmt.Errorf("%s: %w", configName(b.cfg), err)
		}
	}
	if p.Base.Kind == BaseImage {
		p.Traversable = traversable(p.Mounts)
	}
	return nil
}

// choices takes the weaker modes accepted, warm reuse, tool configs
// allowed, the runtime, namespace, output limits and the gate, and
// checks the policy against the backend's capabilities when known.
func (b *builder) choices() error {
	p, sb := b.p, b.sb
	p.Accepted = append(p.Accepted, sb.AcceptWeaker...)
	var err error
	if p.Warm, err = warm(sb, b.role, b.opts.Session, p.AllowAll); err != nil {
		return err // a flag's error (--session), not the config's
	}
	if p.AllowToolConfig, err = allowedToolConfig(b.cfg, sb, b.root, p.Mounts); err != nil {
		return err
	}
	if b.opts.Capabilities != nil {
		if _, err := Enforce(p, p.Backend, b.opts.Capabilities); err != nil {
			return fmt.Errorf("%s: %w", configName(b.cfg), err)
		}
	}
	if sb.Runtime != nil {
		p.Runtime = *sb.Runtime
	}
	if sb.Namespace != nil {
		p.Namespace = *sb.Namespace
	}
	if sb.KubernetesAPI != nil && *sb.KubernetesAPI != profiles.KubernetesPods {
		p.KubernetesAPI = *sb.KubernetesAPI
	}
	p.Output = outputLimits(sb)
	if err := buildGate(b.cfg, sb, p, b.host); err != nil {
		return err
	}
	p.AuditLog = auditLog(sb, b.host, b.root)
	return nil
}

// reach checks that no sandbox can write what the policy is computed
// from: this role's inputs (outOfReach), the config against every role's
// writable paths, and the state directory (the prepared Go build caches,
// the guard's cache and the default audit log).
func (b *builder) reach() error {
	if err := outOfReach(b.cfg, b.root, b.p); err != nil {
		return err
	}
	if b.cfg.Path != "" {
		if err := b.written.check("the config "+b.cfg.Path, b.cfg.Path); err != nil {
			return err
		}
	}
	return b.written.check("triage-sandbox's state directory "+stateDir(b.host)+" (XDG_STATE_HOME)", stateDir(b.host))
}

// environment decides the workdir and the command's environment.
func (b *builder) environment() error {
	rd := b.host.Reads
	p := b.p
	var err error
	if p.Workdir, err = workdir(rd, b.opts.Workdir, b.host.Cwd, p); err != nil {
		return err
	}
	environment(p, b.role, b.sb, b.host, b.pythonEnv, b.gitReplay)
	if !p.AllowAll {
		dependencyEnv(p, b.sb, b.role, b.host, b.deps, b.written)
	}
	brokerEnv(p)
	return nil
}

// dependencyEnv adds the project's prepared Go build cache when it is
// ready (a discard mount) and the Go variables; set_env wins.
func dependencyEnv(p *Policy, sb config.Sandbox, role profiles.Role, host Host, deps goDeps, written sandboxWritten) {
	gocache, cacheEnv, warn := preparedGoCache(p, host, deps, written)
	p.GoCache = gocache
	if warn != "" && role == profiles.RoleReproducer {
		p.Warnings = append(p.Warnings, warn)
	}
	if p.Base.Kind == BaseImage {
		p.Traversable = traversable(p.Mounts)
	}
	for _, e := range append(deps.env, cacheEnv...) {
		if _, ok := sb.SetEnv[e.Name]; !ok {
			setEnv(p, e.Name, e.Value, e.Why)
		}
	}
	p.Env = sortEnv(p.Env)
}

// projectDir is the project's checkout, else the workspace root.
func projectDir(p *Policy) string {
	for _, m := range p.Mounts {
		if m.Why == "project checkout" {
			return m.Path
		}
	}
	return p.WorkspaceRoot
}

// mounts sets p's mounts: the workspace root read-only, the role's
// writable paths, the project's checkout and python environment, and the
// other directories the role needs. It returns the python environment's
// directory ("" without one).
func mounts(p *Policy, cfg *config.File, sb config.Sandbox, role profiles.Role, host Host, written sandboxWritten) (pythonEnv string, err error) {
	rd := host.Reads
	root := p.WorkspaceRoot
	p.Mounts = append(p.Mounts, Mount{Path: root, ReadOnly: true, Kind: "dir", Why: "workspace root"})
	writable, notCreated, errs := writableMounts(rd, cfg, sb, role, root)
	p.Mounts = append(p.Mounts, writable...)
	if cfg.Path == "" {
		p.Warnings = append(p.Warnings, noConfigWarning(root, notCreated))
	}
	if m, ok, err := checkoutMount(cfg, root, host, written); err != nil {
		errs = append(errs, err)
	} else if ok {
		m.Discard = sb.CheckoutWrites == nil || *sb.CheckoutWrites == "discard"
		p.Mounts = append(p.Mounts, m)
	}
	if ms, warn, err := pythonMounts(cfg, root, host, written); err != nil {
		errs = append(errs, err)
	} else if len(ms) > 0 {
		markSystem(rd, ms, profiles.SystemTrees())
		for i := range ms {
			if ms[i].System {
				// Not scanned anyway, and on a host-root base it is the
				// host root's (system.go): nothing to hide there.
				ms[i].Hidden = nil
			}
		}
		p.Mounts = append(p.Mounts, ms...)
		pythonEnv = ms[0].Path
		p.Python = filepath.Join(pythonEnv, "bin", filepath.Base(cfg.Project.Python))
	} else if warn != "" {
		p.Warnings = append(p.Warnings, warn)
	}
	extra, extraErrs := neededDirs(cfg, sb, role, host, root, p.Unreadable, written)
	markSystem(rd, extra, profiles.SystemTrees())
	p.Mounts = append(p.Mounts, extra...)
	errs = append(errs, extraErrs...)
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	p.Mounts = dedupeMounts(p.Mounts)
	keepHiddenClear(p.Mounts)
	return pythonEnv, nil
}

// writableMounts are the role's writable paths, checked. notCreated are
// the missing ones left out because there is no config.
func writableMounts(rd *hostread.Recorder, cfg *config.File, sb config.Sandbox, role profiles.Role, root string) (ms []Mount, notCreated []string, errs []error) {
	for _, w := range writableList(sb, role) {
		m, err := resolveWritable(rd, root, w)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: [sandbox] writable %q: %w", configName(cfg), w, err))
			continue
		}
		// Without a config nobody asked for the outputs: a missing one is
		// left alone rather than created in whatever directory this is.
		if _, err := rd.Lstat(m.Path); cfg.Path == "" && errors.Is(err, os.ErrNotExist) {
			notCreated = append(notCreated, w)
			continue
		}
		ms = append(ms, m)
	}
	return ms, notCreated, errs
}

// noConfigWarning says the built-in defaults are in use, and which
// outputs they leave uncreated.
func noConfigWarning(root string, notCreated []string) string {
	msg := "no triage.toml found: built-in defaults with " + root + " as the workspace root"
	if len(notCreated) > 0 {
		msg += "; outputs that do not exist are not created (" + strings.Join(notCreated, ", ") + "): create them or write a triage.toml"
	}
	return msg
}

// allowedToolConfig checks [sandbox] allow_tool_config: each entry must be
// one of the role's writable paths.
func allowedToolConfig(cfg *config.File, sb config.Sandbox, root string, mounts []Mount) ([]string, error) {
	var out []string
	for _, a := range sb.AllowToolConfig {
		if !slices.ContainsFunc(mounts, func(m Mount) bool { return !m.ReadOnly && m.Path == filepath.Join(root, filepath.Clean(a)) }) {
			return nil, fmt.Errorf("%s: [sandbox] allow_tool_config %q: not one of the role's writable paths; list a writable path", configName(cfg), a)
		}
		out = append(out, filepath.Clean(a))
	}
	return out, nil
}

// outputLimits are the default output limit and ceiling unless the config
// sets them.
func outputLimits(sb config.Sandbox) OutputLimits {
	out := OutputLimits{Limit: profiles.DefaultOutputLimit, Ceiling: profiles.DefaultOutputCeiling}
	if sb.OutputLimit != nil {
		out.Limit = *sb.OutputLimit
	}
	if sb.OutputCeiling != nil {
		out.Ceiling = *sb.OutputCeiling
	}
	return out
}

// auditLog is [sandbox] audit_log (relative to the workspace root), else
// the default.
func auditLog(sb config.Sandbox, host Host, root string) string {
	if sb.AuditLog == nil {
		return DefaultAuditLog(host, root)
	}
	log := filepath.Clean(*sb.AuditLog)
	if !filepath.IsAbs(log) {
		log = filepath.Join(root, log)
	}
	return log
}

// environment sets the command's environment: the host's, filtered for
// the role, and outside allow_all the tools' variables, sorted.
func environment(p *Policy, role profiles.Role, sb config.Sandbox, host Host, pythonEnv string, gitReplay []gitconfig.Entry) {
	env, dropped, warnings := filterEnv(role, sb, host, p)
	p.Env, p.Dropped = env, dropped
	p.Warnings = append(p.Warnings, warnings...)
	if !p.AllowAll {
		hostPath, _ := host.Getenv("PATH")
		toolEnv(p, pythonEnv, hostPath, sb.SetEnv, gitReplay)
		p.Env = sortEnv(p.Env)
	}
}

func configName(cfg *config.File) string {
	if cfg.Path == "" {
		return "built-in defaults"
	}
	return cfg.Path
}

// DefaultAuditLog is in the caller's state directory, keyed by workspace:
// never where a sandbox can write, whatever the writable paths are.
func DefaultAuditLog(host Host, root string) string {
	sum := sha256.Sum256([]byte(root))
	name := filepath.Base(root) + "-" + hex.EncodeToString(sum[:6])
	return filepath.Join(stateDir(host), "audit", name+".jsonl")
}

// stateDir is triage-sandbox's state directory: unreadable in every
// sandbox (profiles.CredentialPaths, and XDG_STATE_HOME's too).
func stateDir(host Host) string {
	state, ok := host.Getenv("XDG_STATE_HOME")
	if !ok || !filepath.IsAbs(state) {
		state = filepath.Join(host.Home, ".local", "state")
	}
	return filepath.Join(state, "triage-sandbox")
}

// outOfReach refuses writable paths that would hand the sandbox what
// decides or records its runs: the workspace root itself, the config file,
// the audit log, or a path that must stay unreadable (it could be moved
// out from under its mask between runs).
func outOfReach(cfg *config.File, root string, p *Policy) error {
	var errs []error
	for _, m := range p.Mounts {
		if m.ReadOnly {
			continue
		}
		where := fmt.Sprintf("%s: [sandbox] writable %q", configName(cfg), strings.TrimPrefix(m.Why, "writable "))
		switch {
		case cfg.Path != "" && within(m.Path, cfg.Path):
			errs = append(errs, fmt.Errorf("%s covers the config %s, so a sandbox could rewrite its own policy; keep triage.toml out of the writable paths", where, cfg.Path))
		case within(m.Path, p.AuditLog):
			errs = append(errs, fmt.Errorf("%s covers the audit log %s; point [sandbox] audit_log outside the writable paths", where, p.AuditLog))
		}
		for _, u := range p.Unreadable {
			if within(m.Path, u) {
				errs = append(errs, fmt.Errorf("%s contains the unreadable path %s, which the sandbox could move from under its mask; keep secrets out of the writable paths", where, u))
			}
		}
	}
	return errors.Join(errs...)
}

// mountsOutOfUnreadable refuses a mount that is, or lies inside, an
// unreadable path: a mount derived from what the policy read (the python
// environment's base, a Go module, the host toolchain) would expose that
// credential store whole, and no mask covers a mount from above. One that
// holds an unreadable path gets a mask (maskUnderMounts).
func mountsOutOfUnreadable(cfg *config.File, p *Policy) error {
	for _, m := range p.Mounts {
		for _, u := range p.Unreadable {
			if within(u, m.Path) {
				return fmt.Errorf("%s: the %s %s lies in the unreadable path %s, which stays unreadable: it is not mounted; move it out of the credential store, or change what names it",
					configName(cfg), m.Why, m.Path, u)
			}
		}
	}
	return nil
}

// neededDirs are read-only mounts the role needs besides the workspace:
// each [sandbox] read_only path, and the directory PLAYWRIGHT_BROWSERS_PATH
// names when the role passes that variable (the browsers live there). A
// path inside an unreadable one is refused; unreadable paths below one are
// masked like under any mount.
func neededDirs(cfg *config.File, sb config.Sandbox, role profiles.Role, host Host, root string, unreadable []string, written sandboxWritten) ([]Mount, []error) {
	rd := host.Reads
	var out []Mount
	var errs []error
	add := func(raw, why string, where string) {
		path := host.expandHome(raw)
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, path)
		}
		if err := written.check(fmt.Sprintf("%s %q", where, raw), path); err != nil {
			errs = append(errs, err)
			return
		}
		dir, err := canonicalDir(rd, path)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s %q: %w", configName(cfg), where, raw, err))
			return
		}
		for _, u := range unreadable {
			if within(u, dir) {
				errs = append(errs, fmt.Errorf("%s: %s %q lies in the unreadable path %s; it stays unreadable", configName(cfg), where, raw, u))
				return
			}
		}
		out = append(out, Mount{Path: dir, ReadOnly: true, Kind: "dir", Why: why})
	}
	for _, r := range sb.ReadOnly {
		add(r, "[sandbox] read_only", "[sandbox] read_only")
	}
	const browsers = "PLAYWRIGHT_BROWSERS_PATH"
	if v, ok := host.Getenv(browsers); ok && v != "" && filepath.IsAbs(v) {
		patterns := append(append([]string(nil), profiles.EnvAllow(role)...), sb.Env...)
		if cred, _ := profiles.LooksLikeCredential(browsers); !cred && matchAny(patterns, browsers) != "" {
			if _, err := rd.Stat(v); err == nil {
				add(v, "the browsers "+browsers+" names", browsers)
			}
		}
	}
	return out, errs
}

// ChooseBackend says which backend Build will pick for role.
func ChooseBackend(cfg *config.File, role profiles.Role, host Host, opts Options) string {
	return chooseBackend(opts.Backend, host, cfg.Resolve(role))
}

// chooseBackend: --backend, then TRIAGE_SANDBOX (ai-triager's variable), then
// the config, then seatbelt on macOS and docker elsewhere. allow_all has no
// backend to speak of: it runs on the host unconfined.
func chooseBackend(flag string, host Host, sb config.Sandbox) string {
	if sb.AllowAll != nil && *sb.AllowAll {
		return "none"
	}
	if flag != "" {
		return flag
	}
	if v, ok := host.Getenv("TRIAGE_SANDBOX"); ok && v != "" {
		return v
	}
	if sb.Backend != nil {
		return *sb.Backend
	}
	if host.OS == "darwin" {
		return "seatbelt"
	}
	return "docker"
}

// network decides the network mode; "network on" is a namespace of the
// sandbox's own with a route out, never the host's network; a list is
// the loopback-only namespace with the host's proxy as its way out.
func network(allowAll bool, sb config.Sandbox) (Network, error) {
	switch {
	case allowAll:
		return Network{Mode: NetworkHost}, nil
	case sb.Network != nil && sb.Network.List:
		// The config checked each entry; parsed again here because a
		// policy may be built from a File made in Go.
		rules, err := allow.Parse(sb.Network.Allow)
		if err != nil {
			return Network{}, err
		}
		return Network{Mode: NetworkProxy, Rules: rules}, nil
	case sb.Network != nil && sb.Network.On:
		return Network{Mode: NetworkOutbound}, nil
	default:
		return Network{Mode: NetworkLoopback}, nil
	}
}

// base picks the readable root: the image for backends whose root is an
// image, else an allow-list of host roots (those that exist here) beside
// the policy's mounts.
func base(rd *hostread.Recorder, sb config.Sandbox, caps []Capability) Base {
	if caps == nil || slices.Contains(caps, profiles.CapImageRoot) {
		b := Base{Kind: BaseImage, Image: profiles.DefaultImage}
		if sb.Image != nil {
			b.Image = *sb.Image
		}
		return b
	}
	b := Base{Kind: BaseHost}
	for _, r := range profiles.HostRoots() {
		if _, err := rd.Stat(r); err == nil {
			b.HostRoots = append(b.HostRoots, r)
		}
	}
	return b
}

func writableList(sb config.Sandbox, role profiles.Role) []string {
	if sb.Writable != nil {
		return sb.Writable
	}
	return profiles.Writable(role)
}

// resolveWritable checks that rel stays inside root, lexically and through
// no symlink at all. A path that does not exist yet is fine: Prepare creates
// it. Symlinks are refused outright, wherever they point, because the target
// could be swapped between the check and the mount.
func resolveWritable(rd *hostread.Recorder, root, rel string) (Mount, error) {
	if rel == "" {
		return Mount{}, errors.New("empty path")
	}
	if filepath.IsAbs(rel) {
		return Mount{}, errors.New("must be relative to the workspace root")
	}
	clean := filepath.Clean(rel)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return Mount{}, fmt.Errorf("escapes the workspace root %s", root)
	}
	if clean == "." {
		return Mount{}, fmt.Errorf("covers the whole workspace root %s (the config and every output); list the output directories instead", root)
	}
	full := filepath.Join(root, clean)
	cur := root
	for _, part := range strings.Split(clean, string(filepath.Separator)) {
		if part == "." {
			continue
		}
		cur = filepath.Join(cur, part)
		fi, err := rd.Lstat(cur)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			return Mount{}, fmt.Errorf("checking %s: %w", cur, err)
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			if cur == full {
				return Mount{}, fmt.Errorf("%s is a symlink; make it a real directory or file inside the workspace", cur)
			}
			return Mount{}, fmt.Errorf("%s goes through the symlink %s; writable paths may not contain symlinks", full, cur)
		}
	}
	kind := "dir"
	if fi, err := rd.Stat(full); err == nil {
		if !fi.IsDir() {
			kind = "file"
		}
	} else if looksLikeFile(clean) {
		kind = "file"
	}
	return Mount{Path: full, ReadOnly: false, Kind: kind, Why: "writable (" + rel + ")"}, nil
}

// looksLikeFile decides what a missing writable path becomes: NOTES.md is a
// file, issues and .triage are directories.
func looksLikeFile(rel string) bool {
	base := path.Base(filepath.ToSlash(rel))
	i := strings.LastIndexByte(base, '.')
	return i > 0 && i < len(base)-1
}

// projectPath is a [project] path as the host finds it: "~/" is the
// home (as in read_only), a relative path is the workspace root's.
func projectPath(raw, root string, host Host) string {
	p := host.expandHome(raw)
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	return filepath.Clean(p)
}

func checkoutMount(cfg *config.File, root string, host Host, written sandboxWritten) (Mount, bool, error) {
	rd := host.Reads
	if cfg.Project.Checkout == "" {
		return Mount{}, false, nil
	}
	path := projectPath(cfg.Project.Checkout, root, host)
	if err := written.check(fmt.Sprintf("[project] checkout %q", cfg.Project.Checkout), path); err != nil {
		return Mount{}, false, err
	}
	dir, err := canonicalDir(rd, path)
	if err != nil {
		return Mount{}, false, fmt.Errorf("%s: [project] checkout %q: %w; clone the repository there or fix the path",
			configName(cfg), cfg.Project.Checkout, err)
	}
	return Mount{Path: dir, ReadOnly: true, Kind: "dir", Why: "project checkout"}, true, nil
}

// pythonMount mounts the interpreter's environment (the directory above bin/)
// read-only when python is a path. A bare name is the image's own python.
// pythonMounts are the interpreter's environment (the directory above
// bin/, first: its bin leads PATH) and what that environment runs on: a
// venv's base interpreter (pyvenv.cfg `home`, a pyenv build outside the
// venv) and the prefix of the file the interpreter path resolves to (its
// shared library included).
func pythonMounts(cfg *config.File, root string, host Host, written sandboxWritten) ([]Mount, string, error) {
	rd := host.Reads
	py := cfg.Project.Python
	if py == "" || !strings.ContainsRune(py, '/') {
		return nil, "", nil
	}
	key := fmt.Sprintf("[project] python %q", py)
	py = projectPath(py, root, host)
	// The environment's pyvenv.cfg and the interpreter's link decide more
	// mounts: none of it may be a sandbox's to write.
	if err := written.check(key, py); err != nil {
		return nil, "", err
	}
	if _, err := rd.Stat(py); err != nil {
		return nil, pythonNotFound(cfg, root, host, py, err), nil
	}
	prefix := filepath.Dir(filepath.Dir(filepath.Clean(py)))
	dir, err := canonicalDir(rd, prefix)
	if err != nil {
		return nil, fmt.Sprintf("[project] python environment %s: %v", prefix, err), nil
	}
	// What the policy reads in the environment: both places CPython looks
	// for pyvenv.cfg, and its lib directories (venv.go).
	for _, f := range []string{"pyvenv.cfg", filepath.Join("bin", "pyvenv.cfg")} {
		if err := written.check(fmt.Sprintf("the python environment's %s (%s)", filepath.Join(dir, f), key), filepath.Join(dir, f)); err != nil {
			return nil, "", err
		}
	}
	if err := written.holding(fmt.Sprintf("the python environment %s (%s)", dir, key), dir); err != nil {
		return nil, "", err
	}
	out := []Mount{{Path: dir, ReadOnly: true, Kind: "dir", Why: "python environment"}}
	// A venv that does not include its base's site-packages is not given
	// them (venv.go): not mounted, not scanned.
	ownPackagesOnly := !venvUsesBaseSitePackages(rd, dir)
	var errs []error
	add := func(base, why string) {
		// What it names may not be a sandbox's either: checked as named,
		// before anything resolves it.
		if err := written.check(fmt.Sprintf("%s %s (%s)", why, base, key), base); err != nil {
			errs = append(errs, err)
			return
		}
		// A base inside the environment is already mounted with it; one
		// that holds it (pyenv-virtualenv's versions/X/envs/NAME) is not.
		d, err := canonicalDir(rd, base)
		if err != nil || d == "/" || within(dir, d) {
			return
		}
		if err := written.holding(fmt.Sprintf("%s %s (%s)", why, d, key), d); err != nil {
			errs = append(errs, err)
			return
		}
		m := Mount{Path: d, ReadOnly: true, Kind: "dir", Why: why}
		if ownPackagesOnly {
			if m.Hidden = baseSitePackages(rd, d, dir); m.Hidden != nil {
				m.Why += ", without its site-packages (the venv does not include them: include-system-site-packages = false)"
			}
		}
		out = append(out, m)
	}
	if home := venvHome(rd, filepath.Join(dir, "pyvenv.cfg")); home != "" {
		add(filepath.Dir(home), "the python environment's base interpreter (pyvenv.cfg home)")
	}
	if real, err := rd.EvalSymlinks(py); err == nil {
		add(filepath.Dir(filepath.Dir(real)), "the prefix the configured python resolves to")
	}
	if len(errs) > 0 {
		return nil, "", errs[0] // one line: the first input refused
	}
	return out, "", nil
}

// pythonNotFound says where [project] python was looked for, why there,
// and, when the checkout has that path (a venv made in the checkout), the
// value that names it.
func pythonNotFound(cfg *config.File, root string, host Host, tried string, err error) string {
	rd := host.Reads
	raw := cfg.Project.Python
	msg := fmt.Sprintf("[project] python %q not found at %s", raw, tried)
	if errors.Is(err, fs.ErrNotExist) {
		msg += " (no such file)"
	} else {
		msg += fmt.Sprintf(" (%v)", err)
	}
	rel := !filepath.IsAbs(raw) && !strings.HasPrefix(raw, "~/")
	if rel {
		msg += fmt.Sprintf("; a relative path resolves against the workspace root %s (the directory holding triage.toml), not the current directory or the checkout", root)
		if co := cfg.Project.Checkout; co != "" {
			inCheckout := filepath.Join(projectPath(co, root, host), raw)
			if _, err := rd.Stat(inCheckout); err == nil {
				if r, err := filepath.Rel(root, inCheckout); err == nil {
					msg += fmt.Sprintf("; the checkout has one: python = %q", filepath.ToSlash(r))
				}
			}
		}
	}
	return msg + "; reproducers will not find it"
}

// remoteDefaults says, one line each, which defaults a backend whose
// sandboxes run on other machines (capabilities known, without
// host_toolchain: a cluster's pods) chose for that reason: the image's
// toolchain where the host's would be the default, and the checkout as a
// copy sent at each start. Setting the key says it instead.
func (b *builder) remoteDefaults() {
	p, caps := b.p, b.opts.Capabilities
	if p.Base.Kind != BaseImage || p.AllowAll || caps == nil || slices.Contains(caps, profiles.CapHostToolchain) {
		return
	}
	if b.sb.Toolchain == nil && b.sb.Image == nil {
		p.Warnings = append(p.Warnings, fmt.Sprintf("toolchain: the %s backend's sandboxes run on other machines, so they use the image's own programs (toolchain = \"image\", the default there); set it to say so", p.Backend))
	}
	if b.sb.CheckoutWrites != nil {
		return
	}
	for _, m := range p.Mounts {
		if m.Why == "project checkout" && m.Discard {
			p.Warnings = append(p.Warnings, fmt.Sprintf("checkout_writes: the %s backend's sandboxes run on other machines, so each gets a copy of the checkout %s, sent at its start, and what it writes there goes with it (checkout_writes = \"discard\", the default); set it to say so", p.Backend, m.Path))
		}
	}
}

// hostToolchain: the toolchain key, or by default the host's, unless the
// config names an image of its own (one built with the project's
// environment, whose /usr must not be covered by the host's) or the
// backend's sandboxes cannot have the host's (caps known and without
// host_toolchain: a cluster's pods run on other machines).
func hostToolchain(sb config.Sandbox, caps []Capability) bool {
	if sb.Toolchain != nil {
		return *sb.Toolchain == "host"
	}
	if caps != nil && !slices.Contains(caps, profiles.CapHostToolchain) {
		return false
	}
	return sb.Image == nil
}

// toolchainMounts are the host's system directories an image-root sandbox
// reads instead of the image's (toolchain = "host"): the host's programs
// and the libraries they link, at the same paths, read-only. /etc stays
// the image's but for what those programs resolve through it.
func toolchainMounts(rd *hostread.Recorder) []Mount {
	var out []Mount
	for _, r := range profiles.ToolchainRoots() {
		fi, err := rd.Lstat(r.Path)
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			continue // a merged /usr's /bin, /lib: the image's own link
		}
		kind := "dir"
		if !fi.IsDir() {
			kind = "file"
		}
		out = append(out, Mount{Path: r.Path, ReadOnly: true, Kind: kind, System: true, Why: "host toolchain: " + r.Why})
	}
	return out
}

// traversable lists the closed image directories that hold a mount.
func traversable(mounts []Mount) []string {
	var out []string
	for _, dir := range profiles.ClosedImageDirs() {
		for _, m := range mounts {
			if m.Path != dir && within(dir, m.Path) {
				out = append(out, dir)
				break
			}
		}
	}
	return out
}

// venvHome reads `home = DIR` from a venv's pyvenv.cfg ("" when absent).
func venvHome(rd *hostread.Recorder, cfgPath string) string {
	b, err := rd.ReadFile(cfgPath)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.TrimSpace(k) == "home" && filepath.IsAbs(strings.TrimSpace(v)) {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// dedupeMounts drops read-only mounts already covered by a read-only parent;
// writable mounts always stay, they are the exceptions. It looks up each
// mount's ancestors rather than comparing every pair: a large go.sum
// makes hundreds of mounts.
func dedupeMounts(ms []Mount) []Mount {
	// A mount whose writes are discarded is not the same as the
	// read-only one around it.
	plain := map[string]bool{}
	for _, m := range ms {
		if m.ReadOnly && !m.Discard {
			plain[m.Path] = true
		}
	}
	covered := func(p string) bool {
		for dir := filepath.Dir(p); ; dir = filepath.Dir(dir) {
			if plain[dir] {
				return true
			}
			if dir == "/" || dir == "." {
				return false
			}
		}
	}
	var out []Mount
	seen := map[string]bool{}
	for _, m := range ms {
		if seen[m.Path] || (m.ReadOnly && !m.Discard && m.Path != "/" && covered(m.Path)) {
			continue
		}
		seen[m.Path] = true
		out = append(out, m)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// within reports whether p is dir or below it.
func within(dir, p string) bool {
	if dir == p {
		return true
	}
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	// No dir+"/": this runs for every pair of mounts, and a large go.sum
	// makes hundreds.
	return len(p) > len(dir) && p[len(dir)] == '/' && strings.HasPrefix(p, dir)
}

func limits(cfg *config.File, sb config.Sandbox, role profiles.Role) profiles.Limits {
	l := profiles.DefaultLimits(role)
	if role == profiles.RoleReproducer && cfg.Repro.Timeout != nil {
		l.Timeout = config.TimeoutDuration(*cfg.Repro.Timeout)
	}
	if sb.Timeout != nil {
		l.Timeout = config.TimeoutDuration(*sb.Timeout)
	}
	if sb.Memory != nil {
		l.Memory = *sb.Memory
	}
	if sb.CPUs != nil {
		l.CPUs = *sb.CPUs
	}
	if sb.Pids != nil {
		l.Pids = *sb.Pids
	}
	if sb.FileSize != nil {
		l.FileSize = *sb.FileSize
	}
	if sb.TmpfsSize != nil {
		l.TmpfsSize = *sb.TmpfsSize
	}
	if sb.ShmSize != nil {
		l.ShmSize = *sb.ShmSize
	}
	if sb.WritableSize != nil {
		l.WritableSize = *sb.WritableSize
	}
	if sb.WritableInodes != nil {
		l.WritableInodes = *sb.WritableInodes
	}
	return l
}

// identity picks the uid:gid inside. Never 0: as the caller when the caller
// is not root, so files in writable paths belong to them; when root runs us
// (CI), as the owner of the checkout whose writes are discarded (checkout,
// "" without one), so the sandbox writes there what that owner could (its
// build output, its coverage), else as the workspace owner, or nobody when
// root owns both.
func identity(sb config.Sandbox, host Host, root, checkout string) (Identity, error) {
	rd := host.Reads
	if sb.User != nil {
		var uid, gid int
		if _, err := fmt.Sscanf(*sb.User, "%d:%d", &uid, &gid); err != nil || uid <= 0 || gid < 0 {
			return Identity{}, fmt.Errorf("[sandbox] user %q: want uid:gid with a non-zero uid", *sb.User)
		}
		return Identity{UID: uid, GID: gid, Switch: uid != host.UID || gid != host.GID, Why: "[sandbox] user"}, nil
	}
	if sb.AllowAll != nil && *sb.AllowAll {
		return Identity{UID: host.UID, GID: host.GID, Why: "allow_all: the caller"}, nil
	}
	if host.UID != 0 {
		return Identity{UID: host.UID, GID: host.GID, Why: "the caller"}, nil
	}
	if checkout != "" {
		if uid, gid, err := owner(rd, checkout); err == nil && uid != 0 {
			return Identity{UID: uid, GID: gid, Switch: true, Why: "the checkout's owner (triage-sandbox runs as root; the sandbox writes in its discarded checkout what that owner could)"}, nil
		}
	}
	uid, gid, err := owner(rd, root)
	if err != nil {
		return Identity{}, fmt.Errorf("workspace root: %w", err)
	}
	if uid != 0 {
		return Identity{UID: uid, GID: gid, Switch: true, Why: "the workspace owner (triage-sandbox runs as root)"}, nil
	}
	return Identity{UID: 65534, GID: 65534, Switch: true, Why: "nobody (root runs triage-sandbox and owns the workspace; the outputs it writes back keep that owner)"}, nil
}

// owner is the uid and gid that own path.
func owner(rd *hostread.Recorder, path string) (uid, gid int, err error) {
	fi, err := rd.Stat(path)
	if err != nil {
		return 0, 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, fmt.Errorf("%s: no owner on this platform", path)
	}
	return int(st.Uid), int(st.Gid), nil
}

// discardedCheckout is the path of the checkout whose writes are
// discarded, "" when there is none.
func discardedCheckout(ms []Mount) string {
	for _, m := range ms {
		if m.Discard && m.ReadOnly && m.Kind == "dir" {
			return m.Path
		}
	}
	return ""
}

// workdir: an explicit --workdir must be visible inside or it is an error;
// the caller's cwd is used when visible, else the workspace root.
func workdir(rd *hostread.Recorder, flag, cwd string, p *Policy) (string, error) {
	visible := func(want string) (string, bool) {
		dir, err := canonicalDir(rd, want)
		if err != nil {
			return "", false
		}
		for _, m := range p.Mounts {
			if m.Kind == "dir" && within(m.Path, dir) {
				return dir, true
			}
		}
		// A skeleton itself (the workspace root holding NOTES.md) is
		// visible; below it, only its mounted entries are.
		if slices.Contains(p.Staging.Skeletons, dir) {
			return dir, true
		}
		return "", false
	}
	if flag != "" {
		if dir, ok := visible(flag); ok {
			return dir, nil
		}
		return "", fmt.Errorf("--workdir %s: not a directory visible in the sandbox; use the workspace root %s or a directory below it", flag, p.WorkspaceRoot)
	}
	if dir, ok := visible(cwd); ok {
		return dir, nil
	}
	return p.WorkspaceRoot, nil
}

// canonicalDir returns the absolute, symlink-free path of an existing directory.
func canonicalDir(rd *hostread.Recorder, p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	real, err := rd.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("%s does not exist", abs)
		}
		return "", err
	}
	fi, err := rd.Stat(real)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", real)
	}
	return real, nil
}

// DefaultWarmIdle ends an unused session or pool.
const DefaultWarmIdle = 10 * time.Minute

// warm decides how started sandboxes are reused: a named session (the
// agent role only: a reproducer's sandbox must not carry anything from one
// reproducer into the next), or a pool of started sandboxes, each used
// once.
func warm(sb config.Sandbox, role profiles.Role, session string, allowAll bool) (Warm, error) {
	w := Warm{Session: session, Idle: DefaultWarmIdle}
	if sb.WarmIdle != nil {
		w.Idle = time.Duration(*sb.WarmIdle) * time.Second
	}
	if session != "" {
		if role != profiles.RoleAgent {
			return Warm{}, fmt.Errorf("--session %s: sessions are for the agent role; a reproducer gets a fresh sandbox every run (pool = K in [sandbox.reproducer] makes that fast)", session)
		}
		if !validSessionName(session) {
			return Warm{}, fmt.Errorf("--session %q: use 1 to 64 letters, digits, '.', '_' or '-'", session)
		}
	}
	if allowAll {
		return Warm{}, nil
	}
	if sb.Pool != nil && session == "" {
		w.Pool = int(*sb.Pool)
	}
	if w.Session == "" && w.Pool == 0 {
		return Warm{}, nil
	}
	return w, nil
}

func validSessionName(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '.' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
