package holderexec

import (
	"context"
	"io"
	"os"
	"sync"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends/internal/launch"
	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/protocol/control"
)

// outputDrain bounds how long the output pipes may stay open after the
// supervisor exited (it killed the command's tree, so they close at once).
const outputDrain = 2 * time.Second

// ByHolder starts the supervisor through the holder's control channel:
// the holder forks it with our pipes as its stdio and the export pipe as
// its descriptor 3.
func ByHolder(ctl *control.Client) Starter {
	return func(ctx context.Context, spec protocol.Exec, gate *OutputHold, exportW *os.File) (*Started, error) {
		return byHolder(ctx, ctl, launch.ExecArgv(spec), gate, exportW)
	}
}

func byHolder(ctx context.Context, ctl *control.Client, argv []string, gate *OutputHold, exportW *os.File) (*Started, error) {
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			_ = f.Close()
		}
	}
	var ends []*os.File // stdin w,r; stdout r,w; stderr r,w: each pipe's kept end first
	for i := range 3 {
		kept, passed, err := holderPipe(i > 0)
		if err != nil {
			closeAll(ends)
			return nil, err
		}
		ends = append(ends, kept, passed)
	}
	stdinW, stdinR := ends[0], ends[1]
	outR, outW := ends[2], ends[3]
	errR, errW := ends[4], ends[5]
	passed := []*os.File{stdinR, outW, errW}
	if exportW != nil {
		passed = append(passed, exportW)
	}
	p, err := ctl.Start(ctx, argv, "", nil, passed)
	for _, f := range []*os.File{stdinR, outW, errW} {
		_ = f.Close()
	}
	if err != nil {
		closeAll([]*os.File{stdinW, outR, errR})
		return nil, err
	}
	var copies sync.WaitGroup
	for _, c := range []struct {
		w io.Writer
		r *os.File
	}{{gate.Stdout(), outR}, {gate.Stderr(), errR}} {
		copies.Add(1)
		go func() {
			defer copies.Done()
			copyGrowing(c.w, c.r)
		}()
	}
	wait := func() error {
		e, err := p.Wait()
		drained := make(chan struct{})
		go func() { copies.Wait(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(outputDrain):
			closeAll([]*os.File{outR, errR})
			<-drained
		}
		closeAll([]*os.File{outR, errR})
		switch {
		case err != nil:
			return err
		case e.Code != 0:
			return &ExitStatus{Code: e.Code}
		}
		return nil
	}
	return &Started{Stdin: stdinW, Wait: wait}, nil
}

// copyGrowing is io.Copy from a pipe with a buffer that starts small and
// grows to io.Copy's 32 KiB once a read fills it: most commands print
// little, and two 32 KiB buffers per session command were most of what a
// keeper allocated for it (and collected). It ends at the reader's end or
// error, or the writer's first error or short write.
func copyGrowing(w io.Writer, r io.Reader) {
	buf := make([]byte, 2<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if m, werr := w.Write(buf[:n]); werr != nil || m != n {
				return
			}
		}
		if err != nil {
			return
		}
		if n == len(buf) && len(buf) < 32<<10 {
			buf = make([]byte, 32<<10)
		}
	}
}
