package docker

import (
	"errors"
	"fmt"
	"net"
	"os"
	osuser "os/user"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// socketFacts are what tells a daemon that is not there from one that
// refuses the caller its socket. The Docker client keeps only the text
// of a permission error, so the socket is dialled once more here, where
// the kernel's answer (EACCES) survives.
type socketFacts struct {
	// dialErr is our own dial of the unix socket (nil: not a unix
	// socket, or it answered).
	dialErr error
	// group and gid own the socket ("" and -1 when unknown).
	group string
	gid   int
	// uid and groups are the caller's (effective uid, supplementary and
	// effective gids).
	uid    int
	groups []int
	// memberByName: the group database lists the caller in group, which
	// this login's groups do not yet reflect.
	memberByName bool
}

// probeSocket gathers socketFacts for host after a failed ping.
func probeSocket(host string) socketFacts {
	f := socketFacts{gid: -1, uid: os.Geteuid()}
	path, ok := strings.CutPrefix(host, "unix://")
	if !ok {
		return f
	}
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		conn.Close()
		return f
	}
	f.dialErr = err
	if st, err := os.Stat(path); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			f.gid = int(sys.Gid)
			f.group = strconv.Itoa(f.gid)
			if g, err := osuser.LookupGroupId(f.group); err == nil {
				f.group = g.Name
			}
		}
	}
	f.groups, _ = os.Getgroups()
	f.groups = append(f.groups, os.Getegid())
	if u, err := osuser.LookupId(strconv.Itoa(f.uid)); err == nil && f.gid >= 0 {
		if ids, err := u.GroupIds(); err == nil {
			f.memberByName = slices.Contains(ids, strconv.Itoa(f.gid))
		}
	}
	return f
}

// unreachable is the error for a daemon that did not answer at host,
// with what fixes it: a refused socket is a running daemon, so the fix
// is the socket's group (or another backend), never starting it.
func unreachable(host string, pingErr error, f socketFacts) error {
	prefix := fmt.Sprintf("cannot reach the Docker daemon at %s: ", host)
	if !errors.Is(f.dialErr, syscall.EACCES) && !errors.Is(f.dialErr, syscall.EPERM) {
		return fmt.Errorf("%s%v; start it (systemctl start docker, or dockerd &) or set DOCKER_HOST", prefix, pingErr)
	}
	const other = "; or use --backend local ([sandbox] backend = \"local\"), which needs no daemon"
	msg := prefix + "the daemon is running but refuses you its socket (permission denied)"
	switch {
	case f.group == "":
		return errors.New(msg + "; ask for access to it (on most systems: the docker group)" + other)
	case slices.Contains(f.groups, f.gid):
		return fmt.Errorf("%s although you are in its group %s (an ACL or a security module may refuse it)%s", msg, f.group, other)
	case f.memberByName:
		return fmt.Errorf("%s; it is owned by group %s: you are in group %s but this login is not yet: log in again (or run `newgrp %s`)%s",
			msg, f.group, f.group, f.group, other)
	}
	return fmt.Errorf("%s; it is owned by group %s and uid %d is not in it: add yourself (sudo usermod -aG %s $USER), then log in again%s",
		msg, f.group, f.uid, f.group, other)
}
