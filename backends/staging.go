package backends

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/stage"
)

// StagePaths are the policy's staged paths: in is what the holder
// unpacks (symlinks found in skeletons included), out what each export
// sends back (only the writable paths).
func StagePaths(p *policy.Policy) (in, out []stage.Path) {
	if !p.Staged() {
		return nil, nil
	}
	for _, m := range p.Mounts {
		if m.ReadOnly {
			continue
		}
		kind := stage.KindDir
		if m.Kind == "file" {
			kind = stage.KindFile
		}
		out = append(out, stage.Path{Path: m.Path, Kind: kind})
	}
	in = append(in, out...)
	for _, l := range p.Staging.Links {
		in = append(in, stage.Path{Path: l, Kind: stage.KindLink})
	}
	return in, out
}

// StageSpec is what the host packs and applies for p.
func StageSpec(p *policy.Policy, paths []stage.Path) stage.Spec {
	dirs := 1
	for _, sp := range paths {
		if sp.Kind == stage.KindDir || sp.Kind == stage.KindSkeleton {
			dirs++
		}
	}
	return stage.Spec{
		Paths: paths, Skip: p.Unreadable, UID: p.User.UID, GID: p.User.GID,
		MaxBytes: int64(dirs) * p.Staging.Size,
		// The staged filesystems' inode bound, again on the host: a backend
		// whose tmpfs ignores nr_inodes (gVisor's) cannot make the host
		// create more.
		MaxEntries:        dirs * int(p.Staging.Inodes),
		MaxEntriesPerPath: int(p.Staging.Inodes),
		Chown:             os.Geteuid() == 0,
	}
}

// ExportSpec is what the exporter sends back for p: the writable paths,
// then the skeletons whose other writes it names, each staged directory
// bounded by the staged filesystems' inode bound.
func ExportSpec(p *policy.Policy) protocol.Export {
	_, out := StagePaths(p)
	return protocol.Export{Stage: ExportPaths(p, out), MaxEntries: max(int(p.Staging.Inodes), 0)}
}

// ExportArgv is the exporter's argv for p, at InitPath.
func ExportArgv(p *policy.Policy) []string {
	return protocol.MustArgv(InitPath, protocol.EntryExport, ExportSpec(p))
}

// ExportPaths are the writable paths plus the skeleton directories: what
// an export sends and what Apply accepts.
func ExportPaths(p *policy.Policy, out []stage.Path) []stage.Path {
	paths := append([]stage.Path(nil), out...)
	for _, s := range p.Staging.Skeletons {
		paths = append(paths, stage.Path{Path: s, Kind: stage.KindSkeleton})
	}
	return paths
}

// StagedMounts are the staged filesystems a container renderer mounts:
// path to tmpfs options (size, inodes, nosuid, nodev, owned by the sandbox
// identity). Writable directories and skeletons each get one.
func StagedMounts(p *policy.Policy) map[string]string {
	if !p.Staged() {
		return nil
	}
	opts := strings.Join([]string{"rw", "nosuid", "nodev", "exec",
		fmt.Sprintf("size=%d", p.Staging.Size), fmt.Sprintf("nr_inodes=%d", p.Staging.Inodes), "mode=0755",
		fmt.Sprintf("uid=%d", p.User.UID), fmt.Sprintf("gid=%d", p.User.GID)}, ",")
	out := map[string]string{}
	for _, s := range p.Staging.Skeletons {
		out[s] = opts
	}
	for _, m := range p.Mounts {
		if !m.ReadOnly && m.Kind != "file" {
			out[m.Path] = opts
		}
	}
	return out
}

// WithExport is spec for a runtime that can pass the exec an extra
// descriptor (runc exec --preserve-fds): the supervisor writes the staged
// paths to fd once the command's tree is gone, so the copy back needs no
// second exec. Nothing staged, nothing changed.
func WithExport(spec protocol.Exec, p *policy.Policy, fd int) protocol.Exec {
	if _, out := StagePaths(p); len(out) == 0 {
		return spec
	}
	e := ExportSpec(p)
	spec.ExportFD, spec.Export = fd, &e
	return spec
}

// ErrHolderEnded: the holder ended before it said it was ready.
var ErrHolderEnded = errors.New("the sandbox ended before it was ready")

// StageIn sends the policy's staged paths to a just-started holder (w is
// its stdin, ahead of the lifeline) and returns what was sent. Nothing
// staged, nothing sent.
func StageIn(ctx context.Context, w io.Writer, p *policy.Policy) (stage.Manifest, error) {
	in, _ := StagePaths(p)
	if len(in) == 0 {
		return nil, nil
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	m, err := stage.Pack(ctx, bw, StageSpec(p, in))
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return nil, fmt.Errorf("copying the writable paths into the sandbox: %w", err)
	}
	return m, nil
}

// AwaitHolder waits until the holder's status (out) says it is ready with
// its staged copy in place, says why it could not be, or the holder ended
// (ErrHolderEnded) or ctx did.
func AwaitHolder(ctx context.Context, out *SmallBuffer, exited <-chan struct{}) error {
	return awaitStatus(ctx, out, exited, protocol.StateReady)
}

// AwaitHolderAwaiting is AwaitHolder for a holder whose staged copy is
// deferred (StartOptions.DeferStaging): it waits until the holder says it
// awaits its copy (or is ready, having nothing to stage).
func AwaitHolderAwaiting(ctx context.Context, out *SmallBuffer, exited <-chan struct{}) error {
	return awaitStatus(ctx, out, exited, protocol.StateAwaitingStage, protocol.StateReady)
}

func awaitStatus(ctx context.Context, out *SmallBuffer, exited <-chan struct{}, want ...protocol.State) error {
	states := append(want, protocol.StateHolderFailed, protocol.StateStagingFailed)
	// The buffer tells of each write; the tick is only a backstop.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	changed := out.Changed()
	for {
		if s, ok := protocol.First(out.Bytes(), states...); ok {
			return holderStatusErr(s)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			// Its last words may have come with its end.
			if s, ok := protocol.First(out.Bytes(), states...); ok {
				return holderStatusErr(s)
			}
			return ErrHolderEnded
		case <-changed:
		case <-tick.C:
		}
	}
}

// DeferredStage is the host's side of a holder's staged copy that may
// come after the start (StartOptions.DeferStaging): every backend with a
// holder keeps one per sandbox. Its zero value is a sandbox staged at its
// start.
type DeferredStage struct {
	state atomic.Int32
}

// The states of a DeferredStage.
const (
	stageInPlace int32 = iota
	stagePending
	stageSending
	stageFailed
)

// Defer reports whether the start of a sandbox for p with opts leaves its
// staged copy for later, and notes it if so.
func (d *DeferredStage) Defer(p *policy.Policy, opts StartOptions) bool {
	in, _ := StagePaths(p)
	if !opts.DeferStaging || len(in) == 0 {
		return false
	}
	d.state.Store(stagePending)
	return true
}

// Stage runs send (StageIn and AwaitHolder on the backend's holder) if
// the copy is still to come; once only: a copy that failed part way
// leaves the sandbox unusable.
func (d *DeferredStage) Stage(send func() error) error {
	if !d.state.CompareAndSwap(stagePending, stageSending) {
		return d.InPlace()
	}
	if err := send(); err != nil {
		d.state.Store(stageFailed)
		return err
	}
	d.state.Store(stageInPlace)
	return nil
}

// InPlace says why no command may run yet (nil: the copy is in place).
func (d *DeferredStage) InPlace() error {
	switch d.state.Load() {
	case stageInPlace:
		return nil
	case stageFailed:
		return errors.New("the sandbox's writable paths could not be copied in; it runs no command")
	default:
		return errors.New("the sandbox's writable paths are not copied in yet; it runs no command before")
	}
}

// holderStatusErr is what a holder's first start status means to Start.
func holderStatusErr(s protocol.Status) error {
	switch s.State {
	case protocol.StateReady, protocol.StateAwaitingStage:
		return nil
	case protocol.StateStagingFailed:
		return fmt.Errorf("copying the writable paths into the sandbox: %s (raise [sandbox] writable_size or writable_inodes, or clean up the writable paths)", s.Detail)
	default:
		return fmt.Errorf("the sandbox's holder: %s", s.Detail)
	}
}
