// Package staging is the host's side of a sandbox's staged writable
// paths for every backend that stages them: which paths a policy stages,
// the bounds the copy is packed and applied with (package stage), and the
// copy sent in to a starting holder.
package staging

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/policy"
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

// ExportPaths are the writable paths plus the skeleton directories: what
// an export sends and what Apply accepts.
func ExportPaths(p *policy.Policy, out []stage.Path) []stage.Path {
	paths := append([]stage.Path(nil), out...)
	for _, s := range p.Staging.Skeletons {
		paths = append(paths, stage.Path{Path: s, Kind: stage.KindSkeleton})
	}
	return paths
}

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

// DeferredStage is the host's side of a holder's staged copy that may
// come after the start (backends.StartOptions.DeferStaging): every backend with a
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
func (d *DeferredStage) Defer(p *policy.Policy, opts backends.StartOptions) bool {
	in, _ := StagePaths(p)
	if !opts.DeferStaging || len(in) == 0 {
		return false
	}
	d.state.Store(stagePending)
	return true
}

// Stage runs send (StageIn and holderexec.AwaitHolder on the backend's holder) if
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

// StageWithin is Stage for a sandbox whose copy goes over the stream its
// commands also use: under mu (no command starts meanwhile), with send
// bounded by timeout.
func (d *DeferredStage) StageWithin(ctx context.Context, mu sync.Locker, timeout time.Duration, send func(context.Context) error) error {
	mu.Lock()
	defer mu.Unlock()
	return d.Stage(func() error {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return send(ctx)
	})
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
