package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/triage-sandbox/triage-sandbox/backends/internal/holderexec"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/stage"
)

// The workspace by copy. A pod cannot mount the host's directories (the
// node is another machine; the restricted profile forbids hostPath too),
// so each read-only directory the policy mounts (the workspace root, the
// checkout) is packed on the host as the sandbox identity may read it
// (stage.Pack, like the staged writable paths) and unpacked by an init
// container (unpackContainer, entry __unpack) into an emptyDir of its own,
// which the holder's container mounts read-only; a discard mount's copy is
// mounted writable instead, in memory and bounded, its writes gone with
// the pod. The staged writable paths keep their own way in (the holder's
// stdin) and out (the exporter).

// unpackContainer is the name of the pod's init container.
const unpackContainer = "unpack"

// copiedDir is one read-only directory (or file) of the policy given to
// the pod as a copy.
type copiedDir struct {
	Path    string
	Discard bool
	// File: a single file (a read-only entry of a staged directory): it
	// is unpacked into a volume of its directory's files, which the
	// holder's container mounts file by file (subPath), read-only.
	File bool
}

// fileGroup is the files of one directory copied into one volume.
type fileGroup struct {
	Dir   string
	Names []string
}

// fileGroups are the copied files by directory, in path order; the i-th
// is the volume named fileVolume(i).
func fileGroups(copies []copiedDir) []fileGroup {
	byDir := map[string][]string{}
	for _, c := range copies {
		if c.File {
			byDir[filepath.Dir(c.Path)] = append(byDir[filepath.Dir(c.Path)], filepath.Base(c.Path))
		}
	}
	var out []fileGroup
	for d, names := range byDir {
		slices.Sort(names)
		out = append(out, fileGroup{Dir: d, Names: names})
	}
	slices.SortFunc(out, func(a, b fileGroup) int { return strings.Compare(a.Dir, b.Dir) })
	return out
}

func fileVolume(i int) string { return fmt.Sprintf("f%d", i) }

// copiedDirs are the policy's read-only directories the pod gets by copy,
// parents first. A whole host system directory (the host toolchain's
// /usr, or the /usr a python environment made from the system's brings)
// or a single file cannot be given that way: refused, saying what to do
// instead. A system directory inside one (read_only = ["/usr/local/go"])
// is copied like any other.
func copiedDirs(p *policy.Policy) ([]copiedDir, error) {
	staged := stagedPaths(p)
	var out []copiedDir
	for _, m := range p.Mounts {
		if !m.ReadOnly || slices.Contains(staged, filepath.Clean(m.Path)) {
			continue
		}
		switch {
		case m.System && !insideSystemTree(m.Path):
			return nil, fmt.Errorf("the kubernetes backend cannot give a pod the host's %s (%s): the node is another machine; use the image's own: name the image in [sandbox] image, set [sandbox] toolchain = \"image\", or name its interpreter in [project] python (\"python3\")", m.Path, m.Why)
		case m.Kind == "file" && m.Discard:
			return nil, fmt.Errorf("the kubernetes backend has no discard mount of a single file: %s (%s)", m.Path, m.Why)
		}
		out = append(out, copiedDir{Path: filepath.Clean(m.Path), Discard: m.Discard, File: m.Kind == "file"})
	}
	slices.SortFunc(out, func(a, b copiedDir) int { return depth(a.Path) - depth(b.Path) })
	return out, nil
}

// insideSystemTree: path lies below one of profiles.SystemTrees, not at
// its top.
func insideSystemTree(path string) bool {
	return slices.ContainsFunc(profiles.SystemTrees(), func(t string) bool { return strings.HasPrefix(path, t+"/") })
}

// stagedPaths are the directories the holder's staged copy fills (the
// writable paths and skeletons): never also copied read-only.
func stagedPaths(p *policy.Policy) []string {
	var out []string
	for d := range launch.StagedMounts(p) {
		out = append(out, filepath.Clean(d))
	}
	return out
}

// packSpec is what the host packs for the copies: each copied directory,
// without the unreadable paths, the mounts' hidden directories, the staged
// paths and the copies nested in it (each filled on its own).
// (A copied file may itself lie in a staged directory: only what is
// nested in a copied directory is skipped.)
func packSpec(p *policy.Policy, dirs []copiedDir) stage.Spec {
	spec := stage.Spec{UID: p.User.UID, GID: p.User.GID, Skip: append([]string(nil), p.Unreadable...)}
	for _, m := range p.Mounts {
		spec.Skip = append(spec.Skip, m.Hidden...) // masked elsewhere: not copied
	}
	staged := stagedPaths(p)
	for i, d := range dirs {
		spec.Paths = append(spec.Paths, d.stagePath())
		if d.File {
			continue
		}
		for _, e := range dirs[i+1:] {
			if strings.HasPrefix(e.Path, d.Path+"/") {
				spec.Skip = append(spec.Skip, e.Path)
			}
		}
		for _, s := range staged {
			if strings.HasPrefix(s, d.Path+"/") {
				spec.Skip = append(spec.Skip, s)
			}
		}
	}
	return spec
}

func (d copiedDir) stagePath() stage.Path {
	if d.File {
		return stage.Path{Path: d.Path, Kind: stage.KindFile}
	}
	return stage.Path{Path: d.Path, Kind: stage.KindDir}
}

// spoolCopy packs the copies into a temporary file (removed once read)
// and returns it with its size: the size bounds the discard copies'
// memory and the stream can be sent again at the pod's pace.
func spoolCopy(ctx context.Context, p *policy.Policy, dirs []copiedDir) (*os.File, int64, error) {
	if len(dirs) == 0 {
		return nil, 0, nil
	}
	f, err := os.CreateTemp("", "triage-sandbox-kube-copy-*")
	if err != nil {
		return nil, 0, fmt.Errorf("copying the workspace for the pod: %w", err)
	}
	_ = os.Remove(f.Name()) // held open only
	if _, err := stage.Pack(ctx, f, packSpec(p, dirs)); err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("copying the workspace for the pod: %w", err)
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, size, nil
}

// unpackInit is the init container that unpacks the copies from its
// stdin: the holder's image, identity and confinement, every volume of
// the pod mounted writable (the copies to fill; the others so their mount
// points exist inside the copies before the holder's container mounts
// them read-only).
// A copied file's volume is mounted at its directory (where Unpack puts
// it), in place of any other volume there.
func unpackInit(holder corev1.Container, dirs []copiedDir) corev1.Container {
	spec := protocol.Unpack{}
	for _, d := range dirs {
		spec.Paths = append(spec.Paths, d.stagePath())
	}
	c := *holder.DeepCopy()
	c.Name = unpackContainer
	c.Command = protocol.MustArgv(launch.InitPath, protocol.EntryUnpack, spec)
	c.Env = nil
	groups := fileGroups(dirs)
	taken := map[string]bool{}
	for _, g := range groups {
		taken[g.Dir] = true
	}
	c.VolumeMounts = nil
	for _, m := range holder.VolumeMounts {
		if m.SubPath != "" || taken[m.MountPath] {
			continue
		}
		m.ReadOnly = false
		c.VolumeMounts = append(c.VolumeMounts, m)
	}
	for i, g := range groups {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: fileVolume(i), MountPath: g.Dir})
	}
	slices.SortStableFunc(c.VolumeMounts, func(a, b corev1.VolumeMount) int { return depth(a.MountPath) - depth(b.MountPath) })
	return c
}

// unpack sends the copies to the init container over its attach stream
// and returns once it has taken them (its stdin closed; the holder's
// container starts when it exits).
func (s *sandbox) unpack(ctx context.Context, copy io.Reader) error {
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		pod, err := s.b.cli.getPod(ctx, s.r.Pod.Namespace, s.r.Pod.Name)
		if err != nil {
			return fmt.Errorf("waiting for the sandbox's pod: %w", err)
		}
		running, err := initRunning(pod)
		if err != nil {
			return err
		}
		if running {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the sandbox's pod %s did not start: %w (is a node there to run it?)", s.r.Pod.Name, ctx.Err())
		case <-time.After(wait):
		}
	}
	u := s.b.cli.podStreamURL(s.r.Pod.Namespace, s.r.Pod.Name, "attach",
		&corev1.PodAttachOptions{Container: unpackContainer, Stdin: true, Stdout: true, Stderr: true})
	ex, err := remotecommand.NewSPDYExecutor(s.b.cfg, "POST", u)
	if err != nil {
		return err
	}
	var said holderexec.SmallBuffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: copy, Stdout: &said, Stderr: &said})
	s.unpackSaid = strings.TrimSpace(said.String())
	if err != nil {
		return fmt.Errorf("sending the workspace's copy to the sandbox: %v%s", err, s.unpackSays())
	}
	return nil
}

// unpackSays is what the unpacker said, for an error.
func (s *sandbox) unpackSays() string {
	if s.unpackSaid == "" {
		return ""
	}
	return ": " + s.unpackSaid
}

// initRunning: the unpacker runs (true), or why it never will.
func initRunning(pod *corev1.Pod) (bool, error) {
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return false, fmt.Errorf("the sandbox's pod ended before it was ready: %s %s", pod.Status.Reason, pod.Status.Message)
	}
	for _, c := range pod.Status.InitContainerStatuses {
		switch {
		case c.State.Running != nil:
			return true, nil
		case c.State.Terminated != nil:
			if c.State.Terminated.ExitCode == 0 {
				return false, errors.New("the sandbox's unpacker ended before it got the workspace's copy")
			}
			return false, fmt.Errorf("the sandbox's unpacker failed (exit %d): %s", c.State.Terminated.ExitCode, c.State.Terminated.Message)
		case c.State.Waiting != nil && waitingFailures[c.State.Waiting.Reason]:
			return false, fmt.Errorf("the sandbox's pod cannot start: %s: %s", c.State.Waiting.Reason, c.State.Waiting.Message)
		}
	}
	return false, nil
}
