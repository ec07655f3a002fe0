package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/ownership"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// A container's lifeline (the holder's stdin, closed by the daemon when
// its owner dies) ends inside the container. The watcher is the host's
// own: a process of ours, in a session of its own, whose stdin is a pipe
// from the owner. One watcher carries every container of its owner
// process: the owner lists each container on the pipe before it starts it
// (and waits for the watcher's answer), and says when it removed one.
// When the owner dies (even by kill -9) the pipe closes and the watcher
// removes every container still listed, whatever runs inside them.
//
// The watcher's own death is noticed: its answers' pipe ends. Then the
// owner starts another at once when it has containers listed (and lived a
// while: no loop of restarts), and at the latest at its next List, and
// lists again everything it holds. The watcher ends when nothing is listed
// (the owner closes its pipe), so a Backend that made its own leaves no
// process behind between runs.

// watchAnswerWait bounds how long the owner waits for its watcher's
// answer to one message (a process start included, under load).
const watchAnswerWait = 20 * time.Second

// Watcher is the owner's side of its watcher. A process hosting many
// Backends makes one (NewWatcher) and gives it to each (WithWatcher); a
// Backend without one makes its own on first use.
type Watcher struct {
	exe, remover string

	mu     sync.Mutex
	listed map[string]bool
	proc   *watcherProc
	// starts counts the watcher processes started (tests).
	starts int
}

// watcherProc is one watcher process.
type watcherProc struct {
	cmd     *exec.Cmd
	in      *os.File
	answers chan byte
	started time.Time
}

// NewWatcher is the watcher of this process's containers: the small
// inside binary waits (the CLI's, env.SelfExe, when there is none), the
// CLI's removes.
func NewWatcher(env backends.Env) *Watcher {
	return &Watcher{exe: env.Inside(), remover: env.SelfExe, listed: map[string]bool{}}
}

// List puts container id on the watcher's list and returns once the
// watcher answered: from then on the owner's death removes it.
func (w *Watcher) List(id string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.listed[id] {
		return nil
	}
	w.listed[id] = true
	if err := w.say(ownership.Message{Op: ownership.Listed, ID: id}); err != nil {
		delete(w.listed, id)
		return fmt.Errorf("listing container %s with its watcher: %w", shortID(id), err)
	}
	return nil
}

// Removed takes container id, removed by the owner, off the list; the
// watcher ends once nothing is listed.
func (w *Watcher) Removed(id string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.listed[id] {
		return nil
	}
	delete(w.listed, id)
	err := w.say(ownership.Message{Op: ownership.Removed, ID: id})
	if len(w.listed) == 0 && w.proc != nil {
		// Its list is empty: it ends at once without asking after us.
		w.drop()
	}
	return err
}

// Warm starts a watcher with nothing listed when none runs, so that a
// start's List, after its create, only waits for an answer: a cold run
// otherwise waited for the watcher's process to start between its create
// and its start (2 to 8 ms, more on a busy machine). The process started
// here ends like any other: once its pipe closes (Idle, Removed of the
// last one listed, or the owner's death), having nothing to remove. An
// error is left to List, which tries again and says why.
func (w *Watcher) Warm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.proc == nil {
		_ = w.start()
	}
}

// Idle ends a watcher that has nothing listed (one Warm started for a
// start that failed before its container was listed).
func (w *Watcher) Idle() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.listed) == 0 && w.proc != nil {
		w.drop()
	}
}

// Processes is how many watcher processes this Watcher started (tests).
func (w *Watcher) Processes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.starts
}

// Pid is the running watcher's pid, 0 when none runs (tests).
func (w *Watcher) Pid() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.proc == nil {
		return 0
	}
	return w.proc.cmd.Process.Pid
}

// say tells the running watcher m; with none running, or one that does
// not answer, it starts another, which gets the whole list (m's change
// included). w.mu is held.
func (w *Watcher) say(m ownership.Message) error {
	if w.proc != nil {
		err := w.proc.say(m)
		if err == nil {
			return nil
		}
		w.drop()
	}
	if len(w.listed) == 0 {
		return nil
	}
	return w.start()
}

// drop forgets the running watcher: its pipe closed, it ends (having
// nothing listed, or its owner alive).
func (w *Watcher) drop() {
	_ = w.proc.in.Close()
	w.proc = nil
}

// start starts a watcher and lists everything on it. w.mu is held.
func (w *Watcher) start() error {
	pid := os.Getpid()
	argv, err := protocol.Argv(w.exe, protocol.EntryWatch,
		protocol.Watch{Owner: pid, OwnerStart: ownership.ProcessStart(pid), Remover: w.remover})
	if err != nil {
		return err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("starting the containers' watcher: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_, _ = inR.Close(), inW.Close()
		return fmt.Errorf("starting the containers' watcher: %w", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = "/"
	cmd.Stdin, cmd.Stdout = inR, outW
	// Its own session: a Ctrl-C at the terminal, or a signal to the
	// owner's process group, does not end it before its work.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	_, _ = inR.Close(), outW.Close()
	if err != nil {
		_, _ = inW.Close(), outR.Close()
		return fmt.Errorf("starting the containers' watcher: %w", err)
	}
	w.starts++
	p := &watcherProc{cmd: cmd, in: inW, answers: make(chan byte, 1), started: time.Now()}
	go p.readAnswers(outR)
	go w.await(p)
	var line []byte
	for id := range w.listed {
		if line, err = ownership.AppendMessage(line, ownership.Message{Op: ownership.Listed, ID: id}); err != nil {
			break
		}
	}
	if err == nil {
		err = p.send(line, len(w.listed))
	}
	if err != nil {
		_ = inW.Close()
		return fmt.Errorf("listing the containers with their watcher: %w", err)
	}
	w.proc = p
	return nil
}

// await reaps p and, when it died while still the watcher with something
// listed, starts another at once (one that lived less than a second is
// left to the next List: no loop of restarts).
func (w *Watcher) await(p *watcherProc) {
	_ = p.cmd.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.proc != p {
		return
	}
	w.drop()
	if len(w.listed) > 0 && time.Since(p.started) > time.Second {
		_ = w.start()
	}
}

// readAnswers passes the watcher's answers on; the channel closes when
// they end (the watcher died) or one is not an answer.
func (p *watcherProc) readAnswers(r *os.File) {
	defer close(p.answers)
	defer r.Close()
	var b [1]byte
	for {
		if _, err := io.ReadFull(r, b[:]); err != nil || b[0] != ownership.Ack {
			return
		}
		p.answers <- b[0]
	}
}

// say sends m and waits for its answer.
func (p *watcherProc) say(m ownership.Message) error {
	line, err := ownership.AppendMessage(nil, m)
	if err != nil {
		return err
	}
	return p.send(line, 1)
}

// send writes line (n messages) and waits for n answers.
func (p *watcherProc) send(line []byte, n int) error {
	if _, err := p.in.Write(line); err != nil {
		return fmt.Errorf("the watcher is gone: %w", err)
	}
	deadline := time.NewTimer(watchAnswerWait)
	defer deadline.Stop()
	for ; n > 0; n-- {
		select {
		case _, ok := <-p.answers:
			if !ok {
				return errors.New("the watcher ended before it answered")
			}
		case <-deadline.C:
			return fmt.Errorf("the watcher did not answer within %v", watchAnswerWait)
		}
	}
	return nil
}

// watcherOf is the Backend's watcher: the one it was given, else its own.
func (b *Backend) watcherOf() *Watcher {
	b.watcherOnce.Do(func() {
		if b.watcher == nil {
			b.watcher = NewWatcher(backends.Env{SelfExe: b.selfExe, InsideExe: b.insideExe})
		}
	})
	return b.watcher
}

// createLands bounds how long the remover waits for a container listed
// by name to appear: its owner died with the create asked for, and the
// daemon finishes a create whose client went away.
const createLands = 3 * time.Second

// removeNamed removes the container named name, listed before its create:
// one not there (yet) is looked for again until createLands has passed,
// for a create still in flight when its owner died.
func (b *Backend) removeNamed(ctx context.Context, name string) error {
	deadline := time.Now().Add(createLands)
	for {
		_, err := b.cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
		if err == nil {
			return b.remove(ctx, name)
		}
		if !cerrdefs.IsNotFound(err) {
			return err
		}
		if time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// RemoveOrphans is the watcher's remover, which the watcher (package
// inside, in the small binary) starts once the owner died with containers
// still listed: it removes the containers listed on in (the watcher's
// lifeline messages; anything else refuses them all: `gc` is the way then).
func RemoveOrphans(ctx context.Context, spec protocol.Watch, in io.Reader, errOut io.Writer) int {
	ids, err := ownership.Follow(in, nil)
	if err != nil {
		fmt.Fprintf(errOut, "triage-sandbox: the containers to remove after their owner died: %v (run `triage-sandbox gc`)\n", err)
		return 1
	}
	cli, err := client.New(client.FromEnv)
	if err == nil {
		_, err = cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
	}
	if err != nil {
		fmt.Fprintf(errOut, "triage-sandbox: removing %d container(s) after their owner died: %v (run `triage-sandbox gc`)\n", len(ids), err)
		return 1
	}
	b := &Backend{cli: cli}
	// A few at once: a keeper host's thousand sessions end in seconds, not
	// minutes, without a thousand requests at the daemon together.
	errs := make([]error, len(ids))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(8, len(ids)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if ownership.IsName(ids[i]) {
					errs[i] = b.removeNamed(ctx, ids[i])
				} else {
					errs[i] = b.remove(ctx, ids[i])
				}
			}
		}()
	}
	for i := range ids {
		next <- i
	}
	close(next)
	wg.Wait()
	code := 0
	for i, err := range errs {
		if err != nil {
			fmt.Fprintf(errOut, "triage-sandbox: removing container %s after its owner died: %v (run `triage-sandbox gc`)\n", shortID(ids[i]), err)
			code = 1
		}
	}
	return code
}
