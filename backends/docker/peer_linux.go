package docker

import (
	"context"
	"net"

	"golang.org/x/sys/unix"
)

// peerNproc is the RLIMIT_NPROC hard limit of the process that serves a
// unix socket (its peer's credentials name it); 0 when it cannot be read
// (a TCP endpoint, another user's service).
func peerNproc(ctx context.Context, dial func(context.Context) (net.Conn, error)) uint64 {
	conn, err := dial(ctx)
	if err != nil {
		return 0
	}
	defer conn.Close()
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return 0
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0
	}
	var cred *unix.Ucred
	_ = raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err != nil || cred == nil || cred.Pid <= 0 {
		return 0
	}
	var lim unix.Rlimit
	if unix.Prlimit(int(cred.Pid), unix.RLIMIT_NPROC, nil, &lim) != nil {
		return 0
	}
	return lim.Max
}
