package progress

import "golang.org/x/sys/unix"

// macOS names the same request TIOCGETA.
const ioctlGetTermios = unix.TIOCGETA
