package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/policy"
)

// A host system directory (the host toolchain's /usr, with its setuid su,
// mount, passwd, newuidmap) must be nosuid and nodev inside, whatever
// no_new_privs does. Docker's bind mounts take no such option, but its
// local volume driver mounts a bind with any flags. So each system
// directory is a named volume of the local driver ("type=none,
// o=bind,ro,nosuid,nodev, device=DIR"), shared by every sandbox and made
// once: the daemon mounts it while a container uses it.
//
// The container's mount of it is not marked read-only on purpose: runc
// remounts a read-only bind with MS_RDONLY alone, which clears nosuid and
// nodev (measured on runc 1.1.5: "ro,relatime"), while a bind left as it
// is keeps its source's flags: "ro,nosuid,nodev,relatime". It is read-only
// because its source is, and ensureNoSuidVolumes refuses a volume of that
// name whose options say anything else. Podman takes the flags on a bind
// (systemBinds).

// nosuidVolumePrefix starts the shared volumes' names.
const nosuidVolumePrefix = "triage-sandbox-nosuid-"

// nosuidVolumeLabel marks them (not the sandbox owner's label: they
// belong to no one sandbox, so the sweep leaves them).
const nosuidVolumeLabel = "triage-sandbox.nosuid-system-dir"

// systemVolume: m is rendered as a nosuid volume (a read-only system
// directory; a file cannot be bound onto a volume's directory, and a
// file holds no setuid program or device).
func systemVolume(m policy.Mount) bool {
	return m.System && m.ReadOnly && !m.Discard && m.Kind == "dir"
}

var unsafeName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-zA-Z0-9_.-]+`) })

// NoSuidVolume is the shared volume's name for dir: readable, and unique
// by a digest of the path.
func NoSuidVolume(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	base := unsafeName().ReplaceAllString(filepath.Base(dir), "_")
	return nosuidVolumePrefix + base + "-" + hex.EncodeToString(sum[:])[:12]
}

// nosuidOptions are the local driver's options for dir.
func nosuidOptions(dir string) map[string]string {
	return map[string]string{"type": "none", "device": dir, "o": "bind,ro,nosuid,nodev"}
}

// systemVolumeMount renders a system directory as its shared volume.
func systemVolumeMount(m policy.Mount) mount.Mount {
	return mount.Mount{Type: mount.TypeVolume, Source: NoSuidVolume(m.Path), Target: m.Path,
		VolumeOptions: &mount.VolumeOptions{NoCopy: true}}
}

// ensureNoSuidVolumes makes the shared volumes req uses, and checks that
// each one it finds is this directory's, read-only, nosuid and nodev: a
// volume of that name with other options would give the sandbox the
// directory writable or with its set-id bits. The volumes are asked about
// at once, each a round trip of its own before the create; pre holds the
// answers asked for beside the start's first questions (askVolumes).
func (b *Backend) ensureNoSuidVolumes(ctx context.Context, req *CreateRequest, pre volumeAnswers) error {
	var names, targets []string
	for _, m := range req.HostConfig.Mounts {
		if m.Type == mount.TypeVolume && m.Source == NoSuidVolume(m.Target) {
			names, targets = append(names, m.Source), append(targets, m.Target)
		}
	}
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i := range names {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = b.ensureNoSuidVolume(ctx, names[i], targets[i], pre[names[i]]) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ensureNoSuidVolume makes or checks the volume name of the system
// directory dir; asked, when not nil, is the daemon's answer on it already.
func (b *Backend) ensureNoSuidVolume(ctx context.Context, name, dir string, asked *volumeAnswer) error {
	want := nosuidOptions(dir)
	var v client.VolumeInspectResult
	var err error
	if asked != nil {
		<-asked.done
		v, err = asked.v, asked.err
	} else {
		v, err = b.cli.VolumeInspect(ctx, name, client.VolumeInspectOptions{})
	}
	if err != nil {
		if _, err := b.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Driver: "local",
			DriverOpts: want, Labels: map[string]string{nosuidVolumeLabel: dir}}); err != nil {
			return fmt.Errorf("the nosuid volume of the system directory %s: %w", dir, err)
		}
		if v, err = b.cli.VolumeInspect(ctx, name, client.VolumeInspectOptions{}); err != nil {
			return fmt.Errorf("the nosuid volume of the system directory %s: %w", dir, err)
		}
	}
	if v.Volume.Driver != "local" || !maps.Equal(v.Volume.Options, want) {
		return fmt.Errorf("the Docker volume %s is not the read-only, nosuid bind of %s that triage-sandbox makes (driver %q, options %v): "+
			"remove it (docker volume rm %s) and run again", name, dir, v.Volume.Driver, v.Volume.Options, name)
	}
	return nil
}

// volumeAnswers are the daemon's answers on the nosuid volumes of a
// start's policy, by volume name.
type volumeAnswers map[string]*volumeAnswer

// volumeAnswer is one volume's inspection, there once done is closed.
type volumeAnswer struct {
	done chan struct{}
	v    client.VolumeInspectResult
	err  error
}

// askVolumes asks about p's nosuid volumes at once, beside a start's
// first questions to the daemon: the create then waits for no round trip
// of theirs. Only a Docker engine's start reads the answers (adapt);
// asking another engine costs it a lookup and changes nothing.
func (b *Backend) askVolumes(ctx context.Context, p *policy.Policy) volumeAnswers {
	out := volumeAnswers{}
	for _, m := range p.Mounts {
		if !systemVolume(m) {
			continue
		}
		name := NoSuidVolume(m.Path)
		if out[name] != nil {
			continue
		}
		a := &volumeAnswer{done: make(chan struct{})}
		out[name] = a
		go func() {
			defer close(a.done)
			ictx, cancel := context.WithTimeout(ctx, pingTimeout)
			defer cancel()
			a.v, a.err = b.cli.VolumeInspect(ictx, name, client.VolumeInspectOptions{})
		}()
	}
	return out
}

// systemBinds renders the system volumes as Podman's binds: its Binds
// strings take nosuid and nodev, which its local volumes (in a rootless
// Podman's user namespace) are not tested here to do.
func systemBinds(req *CreateRequest) {
	kept := req.HostConfig.Mounts[:0]
	for _, m := range req.HostConfig.Mounts {
		if m.Type == mount.TypeVolume && m.Source == NoSuidVolume(m.Target) {
			req.HostConfig.Binds = append(req.HostConfig.Binds, m.Target+":"+m.Target+":ro,nosuid,nodev,rprivate")
			continue
		}
		kept = append(kept, m)
	}
	req.HostConfig.Mounts = kept
}
