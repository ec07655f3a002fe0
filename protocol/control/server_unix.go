//go:build unix

package control

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// ServeOptions configure the holder's end.
type ServeOptions struct {
	// Allowed says whether the holder may start argv: it starts only its
	// own helpers, never an arbitrary program, whatever the channel asks.
	Allowed func(argv []string) error
	// Children, when set, starts each process the holder starts and is
	// told of each one's end.
	Children Children
	// Resident, when set, may take a request and run it in the holder
	// itself: it returns the run (which owns files from then on) or false
	// to have the process started as usual. Its run's end is replied like
	// a process's; a run that ends because ctx did (the holder ending the
	// sandbox) is not.
	Resident func(argv []string, files []*os.File) (run ResidentRun, ok bool)
}

// ResidentRun runs a request in the holder and returns its exit code and
// what is left to do once that end is replied (nil: nothing): the host
// waits for the reply, so work that need not come before it comes after.
type ResidentRun func(ctx context.Context) (code int, after func())

// Children tracks the processes the holder started.
type Children interface {
	// Start calls start, which starts one process (argv, already
	// allowed) and returns its pid, and records it: a scan for processes
	// nobody started never sees one half-started.
	Start(argv []string, start func() (pid int, err error)) error
	// Exited is told after the process was reaped, before its end is.
	Exited(pid int)
}

// Serve answers requests on f (the holder's end) until the host closes it
// or ctx ends. Each process runs until it exits; Serve does not kill it.
func Serve(ctx context.Context, f *os.File, o ServeOptions) error {
	fc, err := net.FileConn(f)
	_ = f.Close()
	if err != nil {
		return fmt.Errorf("the control channel: %w", err)
	}
	conn, ok := fc.(*net.UnixConn)
	if !ok {
		_ = fc.Close()
		return fmt.Errorf("the control channel is a %T, not a unix socket", fc)
	}
	return ServeConn(ctx, conn, o)
}

// ServeConn is Serve on a connection the holder dialled itself.
func ServeConn(ctx context.Context, conn *net.UnixConn, o ServeOptions) error {
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	s := &server{conn: conn, o: o}
	defer s.wg.Wait()
	defer conn.Close()
	buf := make([]byte, maxMessage)
	oob := make([]byte, unix.CmsgSpace(maxFiles*4))
	for {
		n, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
		if err == nil && n == 0 {
			return nil // the host closed its end
		}
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("reading the control channel: %w", err)
		}
		files, ferr := receivedFiles(oob[:oobn])
		s.handle(ctx, buf[:n], files, ferr)
	}
}

type server struct {
	conn *net.UnixConn
	o    ServeOptions
	mu   sync.Mutex // serialises replies
	wg   sync.WaitGroup
}

func (s *server) send(r reply) {
	b, err := encode(r)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _, _ = s.conn.WriteMsgUnix(b, nil, nil)
}

func (s *server) handle(ctx context.Context, msg []byte, files []*os.File, ferr error) {
	owned := false
	defer func() {
		if !owned {
			closeAll(files)
		}
	}()
	var req request
	if err := protocol.Strict(msg, maxMessage, &req); err != nil {
		s.send(reply{ID: req.ID, Error: "unreadable request: " + err.Error()})
		return
	}
	if ferr != nil {
		s.send(reply{ID: req.ID, Error: ferr.Error()})
		return
	}
	if len(req.Argv) == 0 {
		s.send(reply{ID: req.ID, Error: "empty argv"})
		return
	}
	if s.o.Allowed != nil {
		if err := s.o.Allowed(req.Argv); err != nil {
			s.send(reply{ID: req.ID, Error: err.Error()})
			return
		}
	}
	if len(files) < 3 {
		s.send(reply{ID: req.ID, Error: fmt.Sprintf("a request passes stdin, stdout and stderr; this one passed %d descriptors", len(files))})
		return
	}
	if s.o.Resident != nil {
		if run, ok := s.o.Resident(req.Argv, files); ok {
			owned = true
			s.runResident(ctx, req.ID, run)
			return
		}
	}
	cmd := &exec.Cmd{Path: req.Argv[0], Args: req.Argv, Dir: req.Dir, Env: req.Env,
		Stdin: files[0], Stdout: files[1], Stderr: files[2], ExtraFiles: files[3:]}
	if req.Env == nil {
		cmd.Env = os.Environ()
	}
	if err := s.start(cmd); err != nil {
		s.send(reply{ID: req.ID, Error: err.Error()})
		return
	}
	s.send(reply{ID: req.ID, Started: true, PID: cmd.Process.Pid})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = cmd.Wait()
		if ctx.Err() != nil {
			// The holder is ending the sandbox: this end is its doing, not
			// the process's; the host learns it from the channel's close.
			return
		}
		if s.o.Children != nil {
			// Before the reply: the host learns of the end once what the
			// process left behind is gone too.
			s.o.Children.Exited(cmd.Process.Pid)
		}
		r := reply{ID: req.ID, Exited: true}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.Signal = int(ws.Signal())
			r.Code = exitcode.Signaled(r.Signal)
		} else {
			r.Code = cmd.ProcessState.ExitCode()
		}
		s.send(r)
	}()
}

// runResident runs a request the holder took on itself, replying as for
// a process: started at once, exited with its code.
func (s *server) runResident(ctx context.Context, id uint64, run ResidentRun) {
	s.send(reply{ID: id, Started: true})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		code, after := run(ctx)
		if after != nil {
			defer after()
		}
		if ctx.Err() != nil {
			return // as for a process: the channel's close tells the end
		}
		s.send(reply{ID: id, Exited: true, Code: code})
	}()
}

// start starts cmd, registered with Children when they are tracked.
func (s *server) start(cmd *exec.Cmd) error {
	if s.o.Children == nil {
		return cmd.Start()
	}
	return s.o.Children.Start(cmd.Args, func() (int, error) {
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		return cmd.Process.Pid, nil
	})
}

// receivedFiles are the descriptors of one message, close-on-exec.
func receivedFiles(oob []byte) ([]*os.File, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, fmt.Errorf("unreadable descriptors: %w", err)
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			unix.CloseOnExec(fd)
			files = append(files, os.NewFile(uintptr(fd), fmt.Sprintf("passed-%d", len(files))))
		}
	}
	if len(files) > maxFiles {
		closeAll(files)
		return nil, fmt.Errorf("%d descriptors is over the %d a request may pass", len(files), maxFiles)
	}
	return files, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}
