package egress

import (
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A tunnel's bytes are moved by splice(2) through a pipe, so they never
// enter the proxy's memory: on a fast link the userspace copy of the
// tunnel was the proxy's whole cost (its read and write calls were 11% of
// a loopback download's CPU, on top of the client's TLS). Each chunk is
// counted against the run's bound before it is passed on.

// pipeSize is asked for each direction's pipe; the kernel may give less.
const pipeSize = 1 << 20

// kernelPipe is one direction's pipe.
type kernelPipe struct{ r, w int }

func newKernelPipe() (*kernelPipe, error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, err
	}
	_, _ = unix.FcntlInt(uintptr(fds[1]), unix.F_SETPIPE_SZ, pipeSize) // a smaller pipe only costs calls
	return &kernelPipe{r: fds[0], w: fds[1]}, nil
}

func (k *kernelPipe) close() {
	_ = unix.Close(k.r)
	_ = unix.Close(k.w)
}

// fill moves up to max bytes from src into the (empty) pipe; 0 and io.EOF
// at the end of src.
func (k *kernelPipe) fill(src syscall.RawConn, max int) (int, error) {
	var n int64
	var serr error
	err := src.Read(func(fd uintptr) bool {
		for {
			n, serr = unix.Splice(int(fd), nil, k.w, nil, max, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
			if serr != unix.EINTR {
				return serr != unix.EAGAIN // EAGAIN: wait until src is readable
			}
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, io.EOF
	}
	return int(n), nil
}

// drain moves n bytes from the pipe to dst.
func (k *kernelPipe) drain(dst syscall.RawConn, n int) error {
	for n > 0 {
		var m int64
		var serr error
		err := dst.Write(func(fd uintptr) bool {
			for {
				m, serr = unix.Splice(k.r, nil, int(fd), nil, n, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
				if serr != unix.EINTR {
					return serr != unix.EAGAIN // EAGAIN: wait until dst is writable
				}
			}
		})
		if err == nil {
			err = serr
		}
		if err != nil {
			return err
		}
		n -= int(m)
	}
	return nil
}

// rawConns gives the descriptors of a and b when both are sockets the
// kernel can splice (TCP or unix stream), or ok false.
func rawConns(a, b net.Conn) (ra, rb syscall.RawConn, ok bool) {
	raw := func(c net.Conn) syscall.RawConn {
		switch c := c.(type) {
		case *net.TCPConn:
			r, err := c.SyscallConn()
			if err == nil {
				return r
			}
		case *net.UnixConn:
			if c.LocalAddr().Network() != "unix" {
				return nil // a datagram or seqpacket socket
			}
			r, err := c.SyscallConn()
			if err == nil {
				return r
			}
		}
		return nil
	}
	ra, rb = raw(a), raw(b)
	return ra, rb, ra != nil && rb != nil
}

// kernelCopy moves src to dst through the kernel until src ends or either
// fails, each chunk counted by account (the bytes the run's bound lets
// pass; fewer than asked cuts the tunnel). It returns handled false, having
// moved nothing, when either socket cannot be spliced; the caller copies
// then. A read deadline that passes while busy says the other direction
// still moves goes on.
func kernelCopy(dst, src net.Conn, account func(n int64) bool, busy func() bool) (handled bool, err error) {
	rdst, rsrc, ok := rawConns(dst, src)
	if !ok {
		return false, nil
	}
	k, err := newKernelPipe()
	if err != nil {
		return false, nil // out of descriptors, say: the copy still works
	}
	defer k.close()
	for {
		if err := src.SetReadDeadline(time.Now().Add(idle)); err != nil {
			return true, err
		}
		n, err := k.fill(rsrc, pipeSize)
		var ne net.Error
		if err != nil && errors.As(err, &ne) && ne.Timeout() && busy() {
			continue
		}
		if errors.Is(err, io.EOF) {
			return true, nil
		}
		if err != nil {
			return true, err
		}
		if !account(int64(n)) {
			return true, errByteBound
		}
		if err := dst.SetWriteDeadline(time.Now().Add(idle)); err != nil {
			return true, err
		}
		if err := k.drain(rdst, n); err != nil {
			return true, err
		}
	}
}
