package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// stderrBytes is how much of the command's stderr is kept for the reason.
const stderrBytes = 4 << 10

// errTooLarge stops copying an answer past maxAnswerBytes; the command then
// gets EPIPE/SIGPIPE instead of filling memory.
var errTooLarge = fmt.Errorf("answer too large (over %d bytes)", maxAnswerBytes)

// commandTransport runs an external program (no shell) that reads the
// chat-completions request JSON on stdin and prints the scores JSON.
type commandTransport struct {
	argv []string
}

func (t *commandTransport) ask(ctx context.Context, req chatRequest) ([]byte, error) {
	payload, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encoding the request: %w", err)
	}
	cmd := exec.CommandContext(ctx, t.argv[0], t.argv[1:]...)
	cmd.Stdin = bytes.NewReader(payload)
	stdout := &capped{max: maxAnswerBytes, fail: true}
	stderr := &capped{max: stderrBytes}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Its own process group, killed whole on timeout: a wrapper script's
	// children (curl, an LLM CLI) must not outlive the question.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A grandchild that escaped the group could still hold stdout open.
	cmd.WaitDelay = 2 * time.Second
	err = cmd.Run()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if stdout.over {
		return nil, errTooLarge
	}
	if err != nil {
		msg := fmt.Sprintf("guard command %s: %v", t.argv[0], err)
		if s := oneLine(stderr.buf.String(), 200); s != "" {
			msg += ": " + s
		}
		return nil, errors.New(msg)
	}
	return stdout.buf.Bytes(), nil
}

// capped keeps the first max bytes written to it. With fail set, a write
// beyond max fails (ending the copy); otherwise the excess is dropped.
type capped struct {
	buf  bytes.Buffer
	max  int
	fail bool
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - c.buf.Len()
	if len(p) > room {
		c.over = true
		c.buf.Write(p[:max(room, 0)])
		if c.fail {
			return 0, errTooLarge
		}
		return len(p), nil
	}
	return c.buf.Write(p)
}
