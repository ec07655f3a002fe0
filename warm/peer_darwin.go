package warm

import "golang.org/x/sys/unix"

// peerUID is the uid of the process that connected to the unix socket fd
// (LOCAL_PEERCRED: as it was at connect).
func peerUID(fd int) (int, error) {
	cred, err := unix.GetsockoptXucred(fd, unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}
