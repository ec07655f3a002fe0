package selftest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// FDCanary is a descriptor this process holds without close-on-exec, on a
// canary file outside every mount, as a caller's harness might (its log
// file, a credential it read): every process started from here inherits
// it unless something in between closes it. The sandbox must not see it;
// the host control, started the same way, does.
type FDCanary struct {
	Path     string
	FD       int
	Dev, Ino uint64
}

// openFDCanary writes the canary file and opens it, inheritable, read-write.
func (c *Canaries) openFDCanary() error {
	path := filepath.Join(c.Dir, "inherited-fd-canary")
	if err := os.WriteFile(path, []byte("selftest canary descriptor "+c.Token+"\n"), 0o600); err != nil {
		return fmt.Errorf("writing the descriptor canary: %w", err)
	}
	// syscall.Open, not os.OpenFile: no O_CLOEXEC, on purpose.
	fd, err := syscall.Open(path, syscall.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("opening the descriptor canary: %w", err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		_ = syscall.Close(fd)
		return fmt.Errorf("the descriptor canary: %w", err)
	}
	c.FD = &FDCanary{Path: path, FD: fd, Dev: uint64(st.Dev), Ino: uint64(st.Ino)}
	return nil
}

// closeFDCanary closes the canary descriptor, if open.
func (c *Canaries) closeFDCanary() {
	if c.FD != nil && c.FD.FD >= 0 {
		_ = syscall.Close(c.FD.FD)
		c.FD.FD = -1
	}
}

// args are the inherited_fds probe's arguments for this canary.
func (f *FDCanary) args(token string) map[string]string {
	if f == nil {
		return map[string]string{"canary": token}
	}
	return map[string]string{"canary": token, "fd": strconv.Itoa(f.FD),
		"dev": strconv.FormatUint(f.Dev, 10), "ino": strconv.FormatUint(f.Ino, 10)}
}
