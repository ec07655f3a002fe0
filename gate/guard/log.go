package guard

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/triage-sandbox/triage-sandbox/hostfs"
)

// logFieldRunes caps the command and task in a log line (as ai-triager).
const logFieldRunes = 500

// verdictLog appends one JSON line per verdict. The log usually lives in
// .triage/, which the sandboxed agent can write, so each append reopens it
// through hostfs.OpenAppend: never through a symlink, never a FIFO.
type verdictLog struct {
	mu   sync.Mutex // one line at a time from this process
	path string     // "" = no log
}

type logLine struct {
	At      string   `json:"at"`
	Command string   `json:"command"`
	Scripts []string `json:"scripts"`
	Allowed bool     `json:"allowed"`
	Scores  *Scores  `json:"scores"`
	Reason  string   `json:"reason"`
	Task    string   `json:"task"`
	Cached  bool     `json:"cached"`
	Model   string   `json:"model"`
}

func (l *verdictLog) write(now time.Time, model string, req Request, v Verdict) error {
	if l.path == "" {
		return nil
	}
	line := logLine{
		At:      now.UTC().Format(time.RFC3339Nano),
		Command: clip(req.Command, logFieldRunes),
		Scripts: make([]string, 0, len(req.Scripts)),
		Allowed: v.Allowed,
		Scores:  v.Scores,
		Reason:  v.Reason,
		Task:    clip(req.Task, logFieldRunes),
		Cached:  v.Cached,
		Model:   model,
	}
	for _, s := range req.Scripts {
		line.Scripts = append(line.Scripts, s.Path)
	}
	b, err := json.Marshal(line)
	if err != nil {
		return fmt.Errorf("guard log: %w", err)
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	fd, err := hostfs.OpenAppend(l.path)
	if err != nil {
		return fmt.Errorf("guard log: %w", err)
	}
	f := os.NewFile(uintptr(fd), l.path)
	_, err = f.Write(b) // one write: O_APPEND keeps lines whole
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("guard log: writing %s: %w", l.path, err)
	}
	return nil
}
