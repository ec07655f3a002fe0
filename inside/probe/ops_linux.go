package probe

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// opProcScan looks for a token in other processes' environ and cmdline.
func opProcScan(s Step, _ string) Observation {
	token := s.Args["token"]
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return Observation{Errno: errnoName(err)}
	}
	self := strconv.Itoa(os.Getpid())
	procs := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil || e.Name() == self {
			continue
		}
		procs++
		for _, f := range []string{"environ", "cmdline"} {
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), f))
			if err == nil && bytes.Contains(b, []byte(token)) {
				return Observation{OK: true, Detail: "token in /proc/" + e.Name() + "/" + f,
					Values: map[string]string{"processes": strconv.Itoa(procs)}}
			}
		}
	}
	return Observation{Detail: fmt.Sprintf("%d other processes visible, no token", procs),
		Values: map[string]string{"processes": strconv.Itoa(procs)}}
}

func opProcMem(s Step, _ string) Observation {
	f, err := os.Open("/proc/" + s.Args["pid"] + "/mem")
	if err != nil {
		return Observation{Errno: errnoName(err)}
	}
	f.Close()
	return Observation{OK: true, Detail: "opened another process's memory"}
}

// opProcStatus reports /proc/self/status fields.
func opProcStatus(s Step, _ string) Observation {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return Observation{Errno: errnoName(err)}
	}
	defer f.Close()
	vals := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok {
			vals[k] = strings.TrimSpace(v)
		}
	}
	want := map[string]string{}
	for _, k := range s.List {
		want[k] = vals[k]
	}
	// The kernel's own answer where one exists: a user-space kernel
	// (gVisor) leaves NoNewPrivs out of its status file but answers prctl.
	if _, asked := want["NoNewPrivs"]; asked {
		if v, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); err == nil {
			want["NoNewPrivs"] = strconv.Itoa(v)
		}
	}
	return Observation{OK: true, Values: want}
}

// opUnshare starts a child in new user and mount namespaces (a Go process is
// multithreaded, so it cannot unshare itself).
func opUnshare(s Step, self string) Observation {
	cmd := exec.Command(self, ChildSubcommand, "true")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	if err := cmd.Run(); err != nil {
		return Observation{Errno: errnoName(err)}
	}
	return Observation{OK: true, Detail: "new user+mount namespace created"}
}

func ptyRoundTrip() error {
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	defer master.Close()
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		return err
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		return err
	}
	slave, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	defer slave.Close()
	if _, err := slave.Write([]byte("ping\n")); err != nil {
		return err
	}
	buf := make([]byte, 16)
	_ = master.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := master.Read(buf); err != nil {
		return err
	}
	return nil
}

// opTIOCSTI pushes a byte into the controlling terminal's input queue, the
// keystroke-injection trick (CVE-2017-5226). Blocked means there is no
// controlling terminal to open or the ioctl is refused.
func opTIOCSTI(s Step, _ string) Observation {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return Observation{Errno: errnoName(err), Detail: "no controlling terminal"}
	}
	defer f.Close()
	b := byte('#')
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.TIOCSTI, uintptr(unsafe.Pointer(&b))); errno != 0 {
		return Observation{Errno: errnoName(errno)}
	}
	return Observation{OK: true, Detail: "injected a byte into the terminal's input"}
}

// opSuidMounts finds, for each path in the list, the mount that holds it
// in /proc/self/mountinfo and reports the ones not mounted nosuid,nodev.
// A user-space kernel's mountinfo (gVisor's) never shows nodev, whatever
// it enforces: where nosuid shows and nodev does not, the step's "device"
// (a live host device node, char 1:11, that the host bound in and opened
// itself) decides by behaviour: opened, device nodes are honoured; refused
// (EACCES from a nodev mount, ENXIO from a kernel that opens no host
// device), they are not. Without one it cannot tell: "nodev" = "unknown".
func opSuidMounts(s Step, _ string) Observation {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Observation{Errno: errnoName(err)}
	}
	return suidMounts(string(b), s.List, s.Args["device"], openDevice)
}

// openDevice opens path for writing only (no write follows; /dev/kmsg
// checks no permission for it), "" on success, else the errno's name.
func openDevice(path string) string {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return errnoName(err)
	}
	_ = unix.Close(fd)
	return ""
}

// suidMounts judges mountinfo for dirs; open tries the device node.
func suidMounts(mountinfo string, dirs []string, device string, open func(string) string) Observation {
	type mnt struct{ point, opts string }
	var mounts []mnt
	for _, line := range strings.Split(mountinfo, "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 {
			mounts = append(mounts, mnt{unescapeMountinfo(f[4]), f[5]})
		}
	}
	var weak, unshown []string
	for _, p := range dirs {
		best := mnt{}
		for _, m := range mounts {
			// Later lines are mounted over earlier ones at the same point.
			if (m.point == "/" || p == m.point || strings.HasPrefix(p, m.point+"/")) && len(m.point) >= len(best.point) {
				best = m
			}
		}
		if best.point == "" {
			continue
		}
		opts := "," + best.opts + ","
		switch where := p + " on " + best.point + " (" + best.opts + ")"; {
		case !strings.Contains(opts, ",nosuid,"):
			weak = append(weak, where)
		case !strings.Contains(opts, ",nodev,"):
			unshown = append(unshown, where)
		}
	}
	o := Observation{OK: true, Values: map[string]string{"checked": strconv.Itoa(len(dirs)), "nodev": "shown"}}
	var notes []string
	if len(unshown) > 0 {
		errno := "ENOENT"
		if device != "" {
			errno = open(device)
		}
		switch {
		case errno == "ENOENT":
			o.Values["nodev"] = "unknown"
			notes = append(notes, "nodev not shown and no host device node to try ("+strings.Join(unshown, "; ")+")")
		case errno == "":
			weak = append(weak, unshown...)
			notes = append(notes, "nodev not shown and the host device node "+device+" opened: device nodes honoured")
		default:
			o.Values["nodev"] = "refused"
			o.Values["device_errno"] = errno
			notes = append(notes, "nodev not shown ("+strings.Join(unshown, "; ")+"), "+device+": "+errno)
		}
	}
	o.Values["found"] = strconv.FormatBool(len(weak) > 0)
	o.Detail = "every one nosuid,nodev: " + strings.Join(dirs, ", ")
	if len(weak) > 0 {
		o.Detail = "set-id bits honoured: " + strings.Join(weak, "; ")
	} else if len(unshown) > 0 {
		o.Detail = "every one nosuid: " + strings.Join(dirs, ", ")
		if o.Values["nodev"] == "refused" {
			o.Detail = "every one nosuid, and a host device node does not open (" + o.Values["device_errno"] + "): " + strings.Join(dirs, ", ")
		}
	}
	if len(notes) > 0 {
		o.Detail += "; " + strings.Join(notes, "; ")
	}
	return o
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
