package protocol

import (
	"fmt"
	"net/netip"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/stage"
)

// Hold is the holder's spec: how it learns that its owner is gone, how long
// it may live, what it unpacks before it says it is ready, and where the
// host's commands come from.
type Hold struct {
	// Lifeline: stdin is the lifeline; its EOF (the owner died, even by
	// SIGKILL) kills everything in the sandbox.
	Lifeline bool `json:"lifeline,omitempty"`
	// TTL is the backstop: past it everything is killed whatever else
	// happens. Zero means none.
	TTL Duration `json:"ttl,omitempty"`
	// Stage are the staged paths, unpacked from stdin (a tar stream ahead
	// of the lifeline) before the holder says it is ready.
	Stage []stage.Path `json:"stage,omitempty"`
	// ControlFD is an inherited control socket to serve (0: none).
	ControlFD int `json:"control_fd,omitempty"`
	// ControlSock is a control socket to dial and serve ("" : none); a
	// holder that cannot dial says so with StateControlUnavailable.
	ControlSock string `json:"control_sock,omitempty"`
	// Modes are the scratch directories' modes, set by the holder first:
	// a runtime may give a tmpfs its mount point's mode whatever the
	// mount's mode= says (runc 1.1 does), leaving HOME 0755.
	Modes []DirMode `json:"modes,omitempty"`
	// RunAs, when set, is the identity the holder takes before anything
	// else (see Identity).
	RunAs *Identity `json:"run_as,omitempty"`
	// Forward, when set, is the holder's forwarder to the host side's
	// network proxy (a network allow-list), listening before the holder
	// says it is ready.
	Forward *Forward `json:"forward,omitempty"`
}

// Forward is a forwarder from TCP on the sandbox's own loopback to the
// proxy's unix socket bound into the sandbox: the command's only way out.
type Forward struct {
	// Listen is a loopback address and port (egress.ForwardAddr).
	Listen string `json:"listen"`
	// Socket is the proxy's socket as the sandbox sees it
	// (egress.SocketInSandbox).
	Socket string `json:"socket"`
}

func (f *Forward) validate() error {
	if f == nil {
		return nil
	}
	ap, err := netip.ParseAddrPort(f.Listen)
	if err != nil || !ap.Addr().IsLoopback() || ap.Port() == 0 {
		return fmt.Errorf("forward.listen %q: want a loopback address and port, e.g. 127.0.0.1:3128", f.Listen)
	}
	if !path.IsAbs(f.Socket) || strings.ContainsRune(f.Socket, 0) || path.Clean(f.Socket) != f.Socket {
		return fmt.Errorf("forward.socket %q: must be a clean absolute path", f.Socket)
	}
	return nil
}

// Identity is the sandbox identity a helper started as root takes first
// of all: its uid and gid, no supplementary group, no capability in any
// set. A runtime whose /proc/PID/fd lets a process of the same uid open a
// helper's descriptors whatever its dumpability (gVisor before release
// 20251215 checks only the file's owner and mode), and which gives a
// process standard streams owned by the uid it starts as, has the helpers
// start as root: their streams stay root's (mode 0600), out of the
// command's reach, while they run as the command does.
type Identity struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
}

// Validate is nil for an identity a helper takes (not root, in range).
func (id *Identity) Validate() error { return id.validate() }

func (id *Identity) validate() error {
	if id == nil {
		return nil
	}
	// Taking root would keep the capabilities it is meant to shed.
	if id.UID <= 0 || id.GID < 0 || id.UID > maxID || id.GID > maxID {
		return fmt.Errorf("run_as %d:%d: want a uid above 0 and a gid of 0 or more, below 2^31", id.UID, id.GID)
	}
	return nil
}

// maxID is the largest uid or gid (the kernel's are 32-bit, -1 reserved).
const maxID = 1<<31 - 1

// DirMode is a directory and the permission bits it gets.
type DirMode struct {
	Path string `json:"path"`
	Mode uint32 `json:"mode"`
}

func (h *Hold) validate() error {
	if len(h.Stage) == 0 {
		h.Stage = nil // [] and absent mean the same; one form round-trips
	}
	if h.ControlFD != 0 && h.ControlSock != "" {
		return fmt.Errorf("control_fd and control_sock: one control channel, not two")
	}
	if h.ControlSock != "" && !strings.HasPrefix(h.ControlSock, "/") {
		return fmt.Errorf("control_sock %q: must be absolute", h.ControlSock)
	}
	if err := checkFD("control_fd", h.ControlFD); err != nil {
		return err
	}
	if len(h.Modes) == 0 {
		h.Modes = nil
	}
	if err := h.RunAs.validate(); err != nil {
		return err
	}
	if err := h.Forward.validate(); err != nil {
		return err
	}
	for _, m := range h.Modes {
		if !strings.HasPrefix(m.Path, "/") || strings.ContainsRune(m.Path, 0) {
			return fmt.Errorf("modes: %q must be absolute", m.Path)
		}
		if m.Mode > 0o7777 {
			return fmt.Errorf("modes: %q: %o is not a permission mode", m.Path, m.Mode)
		}
	}
	return checkPaths(h.Stage)
}

// DecodeHold reads a holder's spec from its arguments.
func DecodeHold(args []string) (Hold, error) {
	var h Hold
	err := decode(EntryHold, args, &h)
	return h, err
}

// Exec is one supervised command's spec.
type Exec struct {
	// Argv is the command, executed with no shell.
	Argv []string `json:"argv"`
	// Dir is the directory the command starts in (absolute); "" keeps the
	// supervisor's own. It is per command, so a session's commands may
	// each start in another directory of the same sandbox.
	Dir string `json:"dir,omitempty"`
	// Timeout kills the command's whole tree (zero: none); Grace is the
	// time between SIGTERM and SIGKILL then.
	Timeout Duration `json:"timeout,omitempty"`
	Grace   Duration `json:"grace,omitempty"`
	// Lifeline: stdin is a lifeline (its EOF kills the tree), not input.
	Lifeline bool `json:"lifeline,omitempty"`
	// Seccomp names a filter set the supervisor loads on itself before it
	// starts the command, for runtimes whose exec loads none.
	Seccomp string `json:"seccomp,omitempty"`
	// Rlimits, when set, are the resource limits the supervisor sets on
	// itself (soft and hard) before it starts the command, which inherits
	// them: for a backend that cannot give its command rlimits otherwise
	// (a pod's spec has none; sandbox-exec takes none). It only lowers: a
	// limit the process already has lower stays.
	Rlimits []Rlimit `json:"rlimits,omitempty"`
	// ExportFD, when set, is an inherited descriptor the supervisor writes
	// Export's paths to once the command's whole tree is gone: the copy
	// back without a second exec.
	ExportFD int     `json:"export_fd,omitempty"`
	Export   *Export `json:"export,omitempty"`
	// RunAs, when set, is the identity the supervisor takes before
	// anything else (see Identity).
	RunAs *Identity `json:"run_as,omitempty"`
}

func (x *Exec) validate() error {
	if len(x.Argv) == 0 || x.Argv[0] == "" {
		return errNoArgv
	}
	if err := checkFD("export_fd", x.ExportFD); err != nil {
		return err
	}
	if len(x.Rlimits) == 0 {
		x.Rlimits = nil // [] and absent mean the same; one form round-trips
	}
	if err := checkRlimits(x.Rlimits); err != nil {
		return err
	}
	if x.Dir != "" && !path.IsAbs(x.Dir) {
		return fmt.Errorf("dir %q is not absolute", x.Dir)
	}
	if (x.ExportFD != 0) != (x.Export != nil) {
		return fmt.Errorf("export_fd and export: both or neither")
	}
	if err := x.RunAs.validate(); err != nil {
		return err
	}
	if x.Export != nil {
		return x.Export.validate()
	}
	return nil
}

// Rlimit is one resource limit, by its Linux name without the RLIMIT_
// prefix ("NOFILE"); the value is both the soft and the hard limit.
type Rlimit struct {
	Name  string `json:"name"`
	Value uint64 `json:"value"`
}

// RlimitNames are the limits a supervisor's spec may set: the policy's
// per-process limits (policy.Policy.Rlimits) and NPROC (gVisor's process
// limit). A name outside them is refused, not ignored.
func RlimitNames() []string { return []string{"CORE", "FSIZE", "NOFILE", "NPROC"} }

func checkRlimits(rs []Rlimit) error {
	seen := map[string]bool{}
	for i, r := range rs {
		if !slices.Contains(RlimitNames(), r.Name) {
			return fmt.Errorf("rlimits[%d]: unknown limit %q (known: %s)", i, r.Name, strings.Join(RlimitNames(), ", "))
		}
		if seen[r.Name] {
			return fmt.Errorf("rlimits[%d]: %s given twice", i, r.Name)
		}
		seen[r.Name] = true
	}
	return nil
}

// DecodeExec reads a supervisor's spec from its arguments.
func DecodeExec(args []string) (Exec, error) {
	var x Exec
	err := decode(EntryExec, args, &x)
	return x, err
}

// Export is what an export sends back: the staged paths, and the bound
// past which a staged directory is not exported at all.
type Export struct {
	Stage      []stage.Path `json:"stage"`
	MaxEntries int          `json:"max_entries,omitempty"`
	// RunAs, when set, is the identity the exporter takes before anything
	// else (see Identity).
	RunAs *Identity `json:"run_as,omitempty"`
}

func (e *Export) validate() error {
	if len(e.Stage) == 0 {
		e.Stage = nil
	}
	if e.MaxEntries < 0 {
		return fmt.Errorf("max_entries %d: must not be negative", e.MaxEntries)
	}
	if err := e.RunAs.validate(); err != nil {
		return err
	}
	return checkPaths(e.Stage)
}

// DecodeExport reads an exporter's spec from its arguments.
func DecodeExport(args []string) (Export, error) {
	var e Export
	err := decode(EntryExport, args, &e)
	return e, err
}

// Unpack is an unpacker's spec: the directories a Pack stream on its
// stdin may fill (each a mount point of its own).
type Unpack struct {
	Paths []stage.Path `json:"paths"`
}

func (u *Unpack) validate() error {
	if len(u.Paths) == 0 {
		return fmt.Errorf("paths: none to unpack into")
	}
	return checkPaths(u.Paths)
}

// DecodeUnpack reads an unpacker's spec from its arguments.
func DecodeUnpack(args []string) (Unpack, error) {
	var u Unpack
	err := decode(EntryUnpack, args, &u)
	return u, err
}

// Local is the local backend's helper's spec: its confinement plan comes
// on PlanFD (JSON, see inside/confine), then it holds the sandbox
// as Hold says, serving the control channel on Hold.ControlFD. TraceFD,
// when set, takes the helper's own phases (package internal/phase) while
// the host traces a run; it is closed before the helper holds.
type Local struct {
	PlanFD  int  `json:"plan_fd"`
	TraceFD int  `json:"trace_fd,omitempty"`
	Hold    Hold `json:"hold"`
}

func (l *Local) validate() error {
	if l.PlanFD == 0 || l.Hold.ControlFD == 0 {
		return fmt.Errorf("plan_fd and hold.control_fd are both required")
	}
	if err := checkFD("plan_fd", l.PlanFD); err != nil {
		return err
	}
	if l.PlanFD == l.Hold.ControlFD {
		return fmt.Errorf("plan_fd and hold.control_fd are both %d", l.PlanFD)
	}
	if err := checkFD("trace_fd", l.TraceFD); err != nil {
		return err
	}
	if l.TraceFD != 0 && (l.TraceFD == l.PlanFD || l.TraceFD == l.Hold.ControlFD) {
		return fmt.Errorf("trace_fd %d is also plan_fd or hold.control_fd", l.TraceFD)
	}
	return l.Hold.validate()
}

// DecodeLocal reads the local helper's spec from its arguments.
func DecodeLocal(args []string) (Local, error) {
	var l Local
	err := decode(EntryLocal, args, &l)
	return l, err
}

// Keeper is a keeper host's spec (package warm): the directory of its
// socket and record, and its key (16 hex digits: the user's binary and
// environment it serves), which names its files there. The policies of
// the keepers it hosts come over its control socket.
type Keeper struct {
	Dir  string `json:"dir"`
	Host string `json:"host"`
}

func (k *Keeper) validate() error {
	if !strings.HasPrefix(k.Dir, "/") {
		return fmt.Errorf("dir %q: must be absolute", k.Dir)
	}
	if len(k.Host) != 16 || strings.Trim(k.Host, "0123456789abcdef") != "" {
		return fmt.Errorf("host %q: want 16 hex digits", k.Host)
	}
	return nil
}

// DecodeKeeper reads a keeper's spec from its arguments.
func DecodeKeeper(args []string) (Keeper, error) {
	var k Keeper
	err := decode(EntryKeeper, args, &k)
	return k, err
}

// Probe is a selftest probe's spec: its marker for the host (a tag only
// in argv, so the host can find the process) and its plan.
type Probe struct {
	Tag  string    `json:"tag"`
	Plan ProbePlan `json:"plan"`
}

func (p *Probe) validate() error { return p.Plan.validate() }

// DecodeProbe reads a probe's spec from its arguments.
func DecodeProbe(args []string) (Probe, error) {
	var p Probe
	err := decode(EntryProbe, args, &p)
	return p, err
}

// checkPaths accepts staged paths that are absolute and of a known kind.
func checkPaths(paths []stage.Path) error {
	for _, p := range paths {
		if !strings.HasPrefix(p.Path, "/") || strings.ContainsRune(p.Path, 0) {
			return fmt.Errorf("staged path %q: must be absolute", p.Path)
		}
		switch p.Kind {
		case stage.KindDir, stage.KindFile, stage.KindLink, stage.KindSkeleton:
		default:
			return fmt.Errorf("staged path %q: unknown kind %q (want %s, %s, %s or %s)",
				p.Path, p.Kind, stage.KindDir, stage.KindFile, stage.KindLink, stage.KindSkeleton)
		}
	}
	return nil
}

// Watch is a container watcher's spec: its owner (a pid and that
// process's start time, so pid reuse cannot pass for it). One watcher
// carries every container of its owner. Its stdin is the owner's lifeline
// (ownership.Follow: each container listed or removed; one ownership.Ack
// per message on its stdout): at its end, if the owner is gone, the
// watcher starts Remover (an absolute path: the CLI's binary, which links
// the Docker client the watcher does not) as EntryWatchRemove with the
// same spec, the containers still listed on its stdin, and that removes
// them.
type Watch struct {
	Owner      int    `json:"owner"`
	OwnerStart string `json:"owner_start"`
	Remover    string `json:"remover"`
}

func (w *Watch) validate() error {
	if w.Owner <= 0 || w.OwnerStart == "" {
		return fmt.Errorf("owner %d (start %q): both are required", w.Owner, w.OwnerStart)
	}
	if !filepath.IsAbs(w.Remover) || strings.ContainsRune(w.Remover, 0) {
		return fmt.Errorf("remover %q: want the absolute path of the triage-sandbox binary", w.Remover)
	}
	return nil
}

// DecodeWatch reads a watcher's spec from its arguments.
func DecodeWatch(args []string) (Watch, error) {
	var w Watch
	err := decode(EntryWatch, args, &w)
	return w, err
}

// DecodeWatchRemove reads a watcher's remover's spec (a Watch) from its
// arguments.
func DecodeWatchRemove(args []string) (Watch, error) {
	var w Watch
	err := decode(EntryWatchRemove, args, &w)
	return w, err
}
