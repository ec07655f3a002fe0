package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/triage-sandbox/triage-sandbox/hostread"
)

// Staging bounds what the sandbox writes and keeps it off the host while
// it runs: each writable directory is a filesystem of its own inside the
// sandbox (Size bytes, Inodes entries, nosuid, nodev) holding a copy of the
// host path, and writes reach the host only when copied back after each
// command, by a host side that never follows what the sandbox planted
// (package stage). A writable file lives in its directory's skeleton: that
// directory is staged too, every other entry in it mounted read-only, so
// rename-based edits (sed -i, editors, os.replace) work on the file and
// nothing else in the directory reaches the host.
type Staging struct {
	Size   int64 `json:"size_bytes"`
	Inodes int64 `json:"inodes"`
	// Skeletons are directories staged only to hold writable files; what
	// else is written in them is discarded.
	Skeletons []string `json:"skeletons,omitempty"`
	// Links are symlinks found in a skeleton: copied in as symlinks, since
	// a bind mount of one would follow it on the host.
	Links []string `json:"links,omitempty"`
}

// maxSkeletonEntries bounds the read-only mounts one skeleton becomes.
const maxSkeletonEntries = 256

// Staged reports whether the writable paths are staged copies.
func (p *Policy) Staged() bool { return p.Staging.Size > 0 }

// StagesIn says whether a staged policy copies anything in: a writable
// path or a skeleton's link (what a holder unpacks at its start).
func (p *Policy) StagesIn() bool {
	if !p.Staged() {
		return false
	}
	if len(p.Staging.Links) > 0 {
		return true
	}
	for _, m := range p.Mounts {
		if !m.ReadOnly {
			return true
		}
	}
	return false
}

// stageWritable stages the policy's writable paths: the sizes come from
// the limits, and each writable file's directory becomes a skeleton whose
// other entries are listed as read-only mounts.
func stageWritable(rd *hostread.Recorder, p *Policy) error {
	p.Staging = Staging{Size: p.Limits.WritableSize, Inodes: p.Limits.WritableInodes}
	// A writable path inside a writable directory is already in that
	// directory's copy; staged twice, it would be copied in twice.
	p.Mounts = slices.DeleteFunc(p.Mounts, func(m Mount) bool {
		return !m.ReadOnly && slices.ContainsFunc(p.Mounts, func(o Mount) bool {
			return !o.ReadOnly && o.Kind != "file" && o.Path != m.Path && within(o.Path, m.Path)
		})
	})
	writable := map[string]bool{}
	for _, m := range p.Mounts {
		if !m.ReadOnly {
			writable[m.Path] = true
		}
	}
	p.Staging.Skeletons = skeletons(p.Mounts)
	for _, s := range p.Staging.Skeletons {
		if err := listSkeleton(rd, p, s, writable); err != nil {
			return err
		}
	}
	sort.SliceStable(p.Mounts, func(i, j int) bool { return p.Mounts[i].Path < p.Mounts[j].Path })
	return nil
}

// skeletons are the directories of writable files that no writable
// directory holds, sorted.
func skeletons(mounts []Mount) []string {
	var dirs, out []string
	for _, m := range mounts {
		if !m.ReadOnly && m.Kind != "file" {
			dirs = append(dirs, m.Path)
		}
	}
	for _, m := range mounts {
		if m.ReadOnly || m.Kind != "file" {
			continue
		}
		parent := filepath.Dir(m.Path)
		if slices.ContainsFunc(dirs, func(d string) bool { return within(d, parent) }) {
			continue
		}
		if !slices.Contains(out, parent) {
			out = append(out, parent)
		}
	}
	sort.Strings(out)
	return out
}

// listSkeleton replaces skeleton s's read-only mount by its entries: each
// directory and file a read-only mount of its own, each symlink a staged
// link, the writable ones and the unreadable ones left out.
func listSkeleton(rd *hostread.Recorder, p *Policy, s string, writable map[string]bool) error {
	entries, err := rd.ReadDir(s)
	if err != nil {
		return fmt.Errorf("staging the writable files in %s: %w", s, err)
	}
	if len(entries) > maxSkeletonEntries {
		return fmt.Errorf("%s holds %d entries, more than the %d a directory with writable files may have; make a subdirectory writable instead of files in it",
			s, len(entries), maxSkeletonEntries)
	}
	p.Mounts = slices.DeleteFunc(p.Mounts, func(m Mount) bool { return m.ReadOnly && m.Path == s })
	for _, e := range entries {
		full := filepath.Join(s, e.Name())
		if writable[full] || slices.Contains(p.Staging.Skeletons, full) || slices.Contains(p.Unreadable, full) {
			continue
		}
		if slices.ContainsFunc(p.Mounts, func(m Mount) bool { return m.Path == full }) {
			continue
		}
		switch t := e.Type(); {
		case t.IsDir():
			p.Mounts = append(p.Mounts, Mount{Path: full, ReadOnly: true, Kind: "dir", Listed: true, Why: "read-only entry of " + s})
		case t.IsRegular():
			p.Mounts = append(p.Mounts, Mount{Path: full, ReadOnly: true, Kind: "file", Listed: true, Why: "read-only entry of " + s})
		case t&os.ModeSymlink != 0:
			p.Staging.Links = append(p.Staging.Links, full)
		}
		// FIFOs, sockets and devices are not visible: a host daemon's
		// socket here stays unreachable.
	}
	return nil
}
