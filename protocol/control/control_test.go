//go:build unix

package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startServer serves the holder's end in this process; allowed nil lets
// /bin/sh through.
func startServer(t *testing.T, allowed func([]string) error) (*Client, context.CancelFunc, <-chan error) {
	t.Helper()
	host, holder, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, holder, ServeOptions{Allowed: allowed}) }()
	c, err := NewClient(host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = c.Close() })
	return c, cancel, served
}

// run starts sh -c script through c and returns its output and exit.
func run(t *testing.T, c *Client, script string) (string, Exit, error) {
	t.Helper()
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	p, err := c.Start(context.Background(), []string{"/bin/sh", "-c", script}, "", nil, []*os.File{devnull, outW, outW})
	outW.Close()
	if err != nil {
		return "", Exit{}, err
	}
	out, _ := io.ReadAll(outR)
	e, err := p.Wait()
	return string(out), e, err
}

func TestStartAndExit(t *testing.T) {
	c, _, _ := startServer(t, nil)
	tests := []struct {
		name, script, out string
		exit              Exit
	}{
		{"output and status", "echo hi; exit 3", "hi\n", Exit{Code: 3}},
		{"killed by a signal", "kill -USR1 $$", "", Exit{Code: 128 + 10, Signal: 10}},
		{"extra descriptor absent", "{ echo x >&3; } 2>/dev/null || echo closed", "closed\n", Exit{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, e, err := run(t, c, tt.script)
			if err != nil {
				t.Fatal(err)
			}
			if out != tt.out || e != tt.exit {
				t.Fatalf("got %q %+v, want %q %+v", out, e, tt.out, tt.exit)
			}
		})
	}
}

func TestConcurrentStarts(t *testing.T) {
	c, _, _ := startServer(t, nil)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, e, err := run(t, c, fmt.Sprintf("sleep 0.0%d; echo %d; exit %d", i, i, i))
			if err == nil && (out != fmt.Sprintf("%d\n", i) || e.Code != i) {
				err = fmt.Errorf("command %d: got %q %+v", i, out, e)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestRefusals(t *testing.T) {
	onlySh := func(argv []string) error {
		if argv[0] != "/bin/sh" {
			return errors.New("not a helper")
		}
		return nil
	}
	c, _, _ := startServer(t, onlySh)
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	tests := []struct {
		name  string
		argv  []string
		files []*os.File
		want  string
	}{
		{"not allowed", []string{"/bin/true"}, []*os.File{devnull, devnull, devnull}, "not a helper"},
		{"too few descriptors", []string{"/bin/sh", "-c", "true"}, []*os.File{devnull}, "passed 1 descriptors"},
		{"empty argv", nil, []*os.File{devnull, devnull, devnull}, "empty argv"},
		{"missing program", []string{"/bin/sh-missing"}, []*os.File{devnull, devnull, devnull}, "not a helper"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Start(context.Background(), tt.argv, "", nil, tt.files)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
	// The channel still works after refusals.
	if out, e, err := run(t, c, "echo ok"); err != nil || out != "ok\n" || e.Code != 0 {
		t.Fatalf("after refusals: %q %+v %v", out, e, err)
	}
}

func TestHolderGoneEndsWaiters(t *testing.T) {
	c, cancel, served := startServer(t, nil)
	outR, outW, _ := os.Pipe()
	defer outR.Close()
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	p, err := c.Start(context.Background(), []string{"/bin/sh", "-c", "sleep 2"}, "", nil, []*os.File{devnull, outW, outW})
	outW.Close()
	if err != nil {
		t.Fatal(err)
	}
	cancel() // the holder stops serving: its end closes
	waited := make(chan error, 1)
	go func() { _, err := p.Wait(); waited <- err }()
	select {
	case err := <-waited:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Wait after the holder went: %v, want ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return after the holder went")
	}
	if _, err := c.Start(context.Background(), []string{"/bin/sh"}, "", nil, []*os.File{devnull, devnull, devnull}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after the holder went: %v, want ErrClosed", err)
	}
	<-served
}

// TestEndingHolderTellsNoExit: a holder that ends the sandbox stops
// serving before it kills what runs; the host must not take that kill for
// the commands' own end (a plain 137), only learn that the channel closed.
// Many processes at once: a reply that slips out before the channel closes
// would be one of them.
func TestEndingHolderTellsNoExit(t *testing.T) {
	c, cancel, served := startServer(t, nil)
	devnull, _ := os.Open(os.DevNull)
	defer devnull.Close()
	var procs []*Process
	for range 20 {
		p, err := c.Start(context.Background(), []string{"/bin/sh", "-c", "sleep 30"}, "", nil, []*os.File{devnull, devnull, devnull})
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	cancel() // the holder ends the sandbox, then kills everything
	for _, p := range procs {
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
	}
	for _, p := range procs {
		if e, err := p.Wait(); !errors.Is(err, ErrClosed) {
			t.Fatalf("Wait after the holder ended the sandbox: %+v %v, want ErrClosed", e, err)
		}
	}
	<-served
}
