package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/backends/internal/holder"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// sandbox is a started pod whose holder takes commands by exec.
type sandbox struct {
	b *Backend
	p *policy.Policy
	r *Rendered
	*holder.Base
	// lifeline is the holder's stdin over the attach stream: the staged
	// copy, then nothing until it is closed (Close, or this process's end).
	lifeline *io.PipeWriter
	attached chan struct{} // closed when the attach stream ended
	// attachErr is why it ended, read once attached is closed.
	attachErr error
	stopPod   context.CancelFunc
	killed    atomic.Bool
	// copy is the read-only directories' copy for the unpacker (nil:
	// none); unpackSaid what the unpacker said.
	copy       io.Reader
	unpackSaid string
}

func newSandbox(b *Backend, p *policy.Policy, r *Rendered) *sandbox {
	// Base.Mu serialises the staged copy and commands on the one attach
	// stream.
	return &sandbox{b: b, p: p, r: r, Base: holder.New(p, holder.Config{Setup: setupTimeout}), attached: make(chan struct{})}
}

// start waits for the holder to run, attaches to it (its lifeline), sends
// the staged copy and waits for the holder's word.
func (s *sandbox) start(ctx context.Context, opts backends.StartOptions) error {
	// Before the holder takes anything: the node it landed on must cap
	// its processes (pids.go).
	node, err := s.awaitScheduled(ctx)
	if err != nil {
		return err
	}
	if s.r.Info.NodePids, err = s.b.provePids(ctx, s.p, node, s.r.Info.Traits()); err != nil {
		return err
	}
	if s.copy != nil {
		if err := s.unpack(ctx, s.copy); err != nil {
			return err
		}
	}
	if err := s.awaitRunning(ctx); err != nil {
		return fmt.Errorf("%w%s", err, s.unpackSays())
	}
	watchCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stopPod = stop
	go s.watchEnd(watchCtx)
	if err := s.attach(ctx); err != nil {
		return err
	}
	// What the holder said before the attach is in its log; what it says
	// after comes on the attach stream.
	if logs, err := s.b.cli.podLogs(ctx, s.r.Pod.Namespace, s.r.Pod.Name); err == nil {
		_, _ = s.Out.Write(logs)
	}
	return s.Ready(ctx, opts)
}

// awaitRunning polls the pod until its holder container runs; a pod that
// cannot start (an image that cannot be pulled, a refused spec) says why.
func (s *sandbox) awaitRunning(ctx context.Context) error {
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		pod, err := s.b.cli.getPod(ctx, s.r.Pod.Namespace, s.r.Pod.Name)
		if err != nil {
			return fmt.Errorf("waiting for the sandbox's pod: %w", err)
		}
		if done, err := podStarted(pod); done || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the sandbox's pod %s did not start: %w (is a node there to run it?)", s.r.Pod.Name, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// waitingFailures are the reasons a waiting container will not start
// without someone's help.
var waitingFailures = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "ErrImageNeverPull": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true,
}

// podStarted: the holder container runs (true), or why it never will.
func podStarted(pod *corev1.Pod) (bool, error) {
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return false, fmt.Errorf("the sandbox's pod ended before it was ready: %s %s", pod.Status.Reason, pod.Status.Message)
	}
	for _, c := range pod.Status.ContainerStatuses {
		switch {
		case c.State.Running != nil:
			return true, nil
		case c.State.Terminated != nil:
			return false, endedBeforeReady(c.State.Terminated)
		case c.State.Waiting != nil && waitingFailures[c.State.Waiting.Reason]:
			return false, fmt.Errorf("the sandbox's pod cannot start: %s: %s", c.State.Waiting.Reason, c.State.Waiting.Message)
		}
	}
	return false, nil
}

// endedBeforeReady is why the holder's container ended before it ran: its
// status, read from the termination message (its log's tail), when it
// said one; a holder of another build (an image whose inside binary speaks
// another protocol version) is named so.
func endedBeforeReady(t *corev1.ContainerStateTerminated) error {
	if s, ok := protocol.First([]byte(t.Message+"\n"), protocol.StateHolderFailed, protocol.StateStagingFailed); ok {
		if err := s.Mismatch("the image's inside binary (the pod's holder)"); err != nil {
			return err
		}
		return fmt.Errorf("the sandbox's holder ended before it was ready (exit %d): %s", t.ExitCode, s)
	}
	return fmt.Errorf("the sandbox's holder ended before it was ready (exit %d): %s", t.ExitCode, t.Message)
}

// watchEnd closes the holder's Gone once its container or pod has ended
// or is gone.
func (s *sandbox) watchEnd(ctx context.Context) {
	defer close(s.Gone)
	for ctx.Err() == nil {
		select {
		case <-s.attached:
			// The attach ends with the holder; the pod's status trails.
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		pod, err := s.b.cli.getPod(ctx, s.r.Pod.Namespace, s.r.Pod.Name)
		if err != nil && ctx.Err() == nil {
			return // deleted (or the API is gone: nothing can run there now)
		}
		if err == nil && holderEnded(pod) {
			return
		}
	}
}

func holderEnded(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return true
	}
	for _, c := range pod.Status.ContainerStatuses {
		if c.State.Terminated != nil {
			return true
		}
	}
	return false
}

// attach opens the holder's stdin, stdout and stderr, and returns once
// the stream is up. The attach stream is the lifeline: when it ends
// (Close, or this process killed) the container's stdin closes
// (stdinOnce) and the holder kills everything.
func (s *sandbox) attach(ctx context.Context) error {
	u := s.b.cli.podStreamURL(s.r.Pod.Namespace, s.r.Pod.Name, "attach",
		&corev1.PodAttachOptions{Container: holderContainer, Stdin: true, Stdout: true, Stderr: true})
	// SPDY, not WebSocket: the upgrade reaches the container runtime's
	// stream server end to end, and the streams are asked for before the
	// stdin is first read; through the API server's WebSocket translation
	// the client's side could be up before the runtime's attach was (an
	// owner killed then left its holder without a lifeline).
	ex, err := remotecommand.NewSPDYExecutor(s.b.cfg, "POST", u)
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	s.lifeline = pw
	s.SetLifeline(pw)
	// The stream reads its input only once its streams exist at the other
	// end: from then on the end of this process ends the holder's stdin.
	in := &firstRead{r: pr, c: make(chan struct{})}
	go func() {
		defer close(s.attached)
		err := ex.StreamWithContext(context.WithoutCancel(ctx), remotecommand.StreamOptions{Stdin: in, Stdout: &s.Out, Stderr: &s.Out})
		s.attachErr = err
		_ = pr.CloseWithError(errors.Join(err, io.ErrClosedPipe))
	}()
	select {
	case <-in.c:
		return nil
	case <-s.attached:
		return fmt.Errorf("attaching to the sandbox's holder: %v", s.attachErr)
	case <-ctx.Done():
		return fmt.Errorf("attaching to the sandbox's holder: %w", ctx.Err())
	}
}

// firstRead closes c at its first Read.
type firstRead struct {
	r    io.Reader
	once sync.Once
	c    chan struct{}
}

func (f *firstRead) Read(p []byte) (int, error) {
	f.once.Do(func() { close(f.c) })
	return f.r.Read(p)
}

// executor streams an exec or attach through the API server: WebSocket,
// or SPDY where something on the way cannot upgrade to it.
func (b *Backend) executor(u *url.URL) (remotecommand.Executor, error) {
	ws, err := remotecommand.NewWebSocketExecutor(b.cfg, "GET", u.String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(b.cfg, "POST", u)
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

func (s *sandbox) ID() string                   { return s.r.Pod.Namespace + "/" + s.r.Pod.Name }
func (s *sandbox) Scratch() policy.ScratchPaths { return scratchPaths }

// kill ends the whole sandbox at once: the pod deleted with no grace.
func (s *sandbox) kill() {
	s.killed.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if c := s.r.claim; c != nil {
		// Else the Sandbox controller would make the pod again.
		_ = s.b.cli.asDelete(ctx, asPath(extensionsGroupVersion, c.Claim.Namespace, resClaims, c.Claim.Name))
	}
	_ = s.b.cli.deletePod(ctx, s.r.Pod.Namespace, s.r.Pod.Name)
}

// Close cuts the lifeline and deletes the pod and its NetworkPolicy,
// returning once the API server has neither.
func (s *sandbox) Close(ctx context.Context) error {
	return s.CloseOnce(func() error {
		if s.lifeline != nil {
			_ = s.lifeline.Close()
		}
		err := s.b.remove(context.WithoutCancel(ctx), s.r)
		if s.stopPod != nil {
			s.stopPod()
			<-s.Gone
		}
		if err != nil {
			return fmt.Errorf("removing sandbox %s: %w", s.ID(), err)
		}
		return nil
	})
}
