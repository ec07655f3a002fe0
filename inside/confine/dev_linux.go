package confine

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// devLinks are /dev's symlinks.
var devLinks = [][2]string{
	{"ptmx", "pts/ptmx"}, {"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"},
	{"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"},
}

// devShmInodes bounds /dev/shm's files (its size bounds their bytes).
const devShmInodes = 16384

// buildDev makes a minimal /dev: a small tmpfs holding the harmless
// character devices bound from the host, a private devpts instance, a
// bounded /dev/shm and the usual symlinks; then /dev itself (not pts or
// shm) becomes read-only.
func (t *tree) buildDev(shmSize int64) error {
	mfd, err := newFS("tmpfs", append(t.ownerOptions(), fsOption{"size", "65536"}, fsOption{"nr_inodes", "64"},
		fsOption{"mode", "755"}), attrsSafe|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return fmt.Errorf("/dev: %w", err)
	}
	defer unix.Close(mfd)
	if err := t.claim(mfd); err != nil {
		return fmt.Errorf("/dev: %w", err)
	}
	if err := t.mountOn(mfd, "/dev", true); err != nil {
		return fmt.Errorf("/dev: %w", err)
	}
	for _, d := range devNodes {
		if err := t.bindDevice(d.name, d.required); err != nil {
			return err
		}
	}
	if err := t.mountDevFS("/dev/pts", "devpts", []fsOption{{"newinstance", ""}, {"ptmxmode", "0666"},
		{"mode", "0620"}}, attrsSafe&^unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC); err != nil {
		return err
	}
	if err := t.mountDevFS("/dev/shm", "tmpfs", []fsOption{{"size", strconv.FormatInt(shmSize, 10)},
		{"nr_inodes", strconv.Itoa(devShmInodes)}, {"mode", "1777"}}, attrsSafe|unix.MOUNT_ATTR_NOEXEC); err != nil {
		return err
	}
	for _, l := range devLinks {
		if err := t.symlink(Symlink{Path: "/dev/" + l[0], Target: l[1]}); err != nil {
			return fmt.Errorf("/dev: %w", err)
		}
	}
	if err := setAttrs(mfd, false, unix.MOUNT_ATTR_RDONLY); err != nil {
		return fmt.Errorf("/dev: making it read-only: %w", err)
	}
	return nil
}

// bindDevice binds the host's /dev/name, which must be a character device.
func (t *tree) bindDevice(name string, required bool) error {
	p := "/dev/" + name
	src, err := openPath(t.host, p, resolveStrict)
	if err == unix.ENOENT && !required {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: opening the host's: %w", p, err)
	}
	defer unix.Close(src)
	if mode, _, err := statPath(src); err != nil || mode != unix.S_IFCHR {
		return fmt.Errorf("%s: the host's is not a character device (%v)", p, err)
	}
	mfd, err := cloneTree(src, false)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	defer unix.Close(mfd)
	// Not nodev: this mount exists to reach the device.
	if err := setAttrs(mfd, false, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return t.mountOn(mfd, p, false)
}

func (t *tree) mountDevFS(p, fstype string, opts []fsOption, attrs int) error {
	mfd, err := newFS(fstype, opts, attrs)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	defer unix.Close(mfd)
	return t.mountOn(mfd, p, true)
}
