package output

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Options configure a Stream.
type Options struct {
	// Limit is the bytes shown in all: the head is streamed as it comes, the
	// tail kept in a ring; what lies between is replaced by a marker.
	Limit int
	// Redactor replaces secrets before anything is shown.
	Redactor *Redactor
	// Raw skips neutralising terminal and workflow-command sequences
	// (redaction still applies).
	Raw bool
	// Ceiling, shared by the streams of one run, stops the command when the
	// bytes produced pass its limit.
	Ceiling *Ceiling
	// SinkLock, shared by the streams of one run, serialises their writes:
	// their sinks may be one file (a CI log, 2>&1), and a write larger than
	// a pipe's atomic size can be split by another writer's (see "Whole
	// lines").
	SinkLock *sync.Mutex
}

// Ceiling is a hard byte limit shared by a run's streams. When crossed it
// calls Stop once; later output is counted and dropped, never buffered.
type Ceiling struct {
	Limit int64
	Stop  func()
	total atomic.Int64
	once  sync.Once
	hit   atomic.Bool
}

// Hit reports whether the ceiling was crossed.
func (c *Ceiling) Hit() bool { return c != nil && c.hit.Load() }

// add counts n bytes and reports whether output may still pass.
func (c *Ceiling) add(n int) bool {
	if c == nil || c.Limit <= 0 {
		return true
	}
	if c.total.Add(int64(n)) <= c.Limit {
		return true
	}
	c.hit.Store(true)
	c.once.Do(func() {
		if c.Stop != nil {
			c.Stop()
		}
	})
	return false
}

// Stats describe what passed through a stream.
type Stats struct {
	BytesIn      int64 `json:"bytes"` // produced by the command
	Lines        int64 `json:"lines"` // newlines produced
	Truncated    bool  `json:"truncated"`
	OmittedBytes int64 `json:"omitted_bytes"` // produced bytes left out between head and tail
	OmittedLines int64 `json:"omitted_lines"`
	// ChangedLines are the lines shown changed by the neutraliser; every
	// other line shown is byte for byte what the command printed.
	ChangedLines int64 `json:"changed_lines" jsonschema:"lines shown changed to be safe (a workflow command marked, control or invisible characters escaped, invalid UTF-8 shown as \\xNN); every other line shown is byte for byte what the command printed, so an id or path in it can be passed back as it is"`
}

// maxHold is how much of a line without newline is held for redaction
// before it is processed anyway, cut about holdBack bytes before its end
// (forcedCut); holdBack is also the margin the ring keeps before the tail.
const (
	maxHold  = 64 << 10
	holdBack = 1 << 10
)

// Stream is one output stream of a run. The head is redacted, neutralised
// and streamed to the sink as it comes, line by line; once it is full, raw
// bytes go to a ring that keeps the latest ones, and only what the ring
// still holds at the end is redacted and shown. Memory stays bounded
// whatever the command prints, work is spent only on what is shown, and
// Write never blocks on it, so the command is always drained.
//
// Whole lines. Unless Raw, every write to the sink is whole lines: it
// starts where a line starts and ends with '\n'. The head shows a line
// only once its newline came, and ends before the first line that does
// not fit (that line starts the tail); the omission marker is a line of
// its own; the tail's first line is judged from where the tail starts;
// and a last line the command left without a newline is shown with one.
// So when two streams (or triage-sandbox's own messages) share one file,
// whatever the interleaving of their writes, every line of that file is
// one line some stream judged whole, from its start, and the neutraliser's
// per-line rules hold for the file: no line start can be formed by one
// stream's partial line followed by another's write, nor by a chunk
// boundary or the cap. SinkLock keeps a write from being split by another
// writer's (a pipe write larger than PIPE_BUF is not atomic).
type Stream struct {
	mu   sync.Mutex
	sink io.Writer
	o    Options

	pending []byte // head phase: raw bytes awaiting a cut no secret spans
	line    []byte // head phase: the redacted start of a line not yet ended
	inPEM   bool   // inside a private key block

	headLeft  int
	headOpen  bool
	headLines int64 // newlines shown in the head
	headShown int   // bytes shown in the head

	ring    *ring // tail phase: the latest raw bytes
	tailRaw int64 // raw bytes written in the tail phase

	stats   Stats
	closed  bool
	sinkErr error
}

// NewStream writes the bounded, cleaned output to sink.
func NewStream(sink io.Writer, o Options) *Stream {
	if o.Limit <= 0 {
		o.Limit = DefaultLimit
	}
	return &Stream{sink: sink, o: o, headLeft: o.Limit / 2, headOpen: true}
}

// Write takes raw output. It always reports len(p) consumed.
func (s *Stream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	s.stats.BytesIn += int64(n)
	if s.closed || !s.o.Ceiling.add(n) {
		return n, nil
	}
	s.stats.Lines += int64(bytes.Count(p, []byte{'\n'}))
	if !s.headOpen {
		s.ringWrite(p)
		return n, nil
	}
	s.pending = append(s.pending, p...)
	if i := bytes.LastIndexByte(s.pending, '\n'); i >= 0 {
		// A secret holding a newline may go on in a later write: keep it.
		if cut := s.o.Redactor.cutBeforeLine(s.pending, i+1); cut > 0 {
			s.processHead(s.pending[:cut])
			s.pending = s.pending[cut:]
		}
	}
	for s.headOpen && len(s.pending) > maxHold {
		cut := s.forcedCut(s.pending)
		if cut == 0 {
			// One token or secret longer than maxHold: the head cannot show
			// it whole, so it ends before it.
			s.headLeft, s.headOpen = 0, false
			break
		}
		s.processHead(s.pending[:cut])
		s.pending = s.pending[cut:]
	}
	if !s.headOpen {
		// The head closed: what was waiting for a newline goes on the tail.
		s.ringWrite(s.line)
		s.ringWrite(s.pending)
		s.line, s.pending = nil, nil
	}
	return n, nil
}

// runChar marks the bytes of the runs no cut may split: tokenChar (the
// characters secrets are written with) plus ':', '%' and '~' (user:password,
// URL-encoded values).
var runChar = func() [256]bool {
	t := tokenChar
	t[':'], t['%'], t['~'] = true, true, true
	return t
}()

// runStart moves a cut that falls inside a run of runChar bytes back to the
// run's start, however far.
func runStart(b []byte, at int) int {
	for at > 0 && at < len(b) && runChar[b[at-1]] && runChar[b[at]] {
		at--
	}
	return at
}

// runEnd moves a cut that falls inside a run of runChar bytes forward to
// the run's end, however far.
func runEnd(b []byte, at int) int {
	for at > 0 && at < len(b) && runChar[b[at-1]] && runChar[b[at]] {
		at++
	}
	return at
}

// forcedCut picks where to cut a line longer than maxHold, about holdBack
// bytes before its end, so that each part is redacted on its own: never
// inside a run of token characters (a pattern rule needs the whole token)
// nor inside a secret's occurrence (an exact needle needs all of it),
// however long. 0 when the line offers no such place.
func (s *Stream) forcedCut(b []byte) int {
	at := runeBoundary(b, len(b)-holdBack)
	for {
		next := s.o.Redactor.cutBefore(b, runStart(b, at))
		if next == at {
			return at
		}
		at = next
	}
}

// tailStart picks where the tail starts, at or after at: after a newline
// if one is near; else never inside a run of token characters nor inside a
// secret's occurrence, however long, since the part before at is gone and
// what follows would be a piece of it (not recognised, so not redacted). A
// run skipped this way loses its separator too.
func (s *Stream) tailStart(b []byte, at int) int {
	if i := bytes.IndexByte(b[at:min(len(b), at+holdBack)], '\n'); i >= 0 {
		at += i + 1
	}
	for i := 0; i < utf8.UTFMax-1 && at < len(b) && !utf8.RuneStart(b[at]); i++ {
		at++
	}
	for {
		next := at
		if e := runEnd(b, next); e != next {
			next = e
			if next < len(b) && b[next] < utf8.RuneSelf {
				next++
			}
		}
		next = s.o.Redactor.cutAfter(b, next)
		if next == at {
			return at
		}
		at = next
	}
}

// redact redacts raw bytes; a block that touches a private key block
// goes line by line.
func (s *Stream) redact(b []byte) []byte {
	if !s.inPEM && !bytes.Contains(b, pemKey) {
		return []byte(s.o.Redactor.Redact(string(b)))
	}
	var out []byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			i = len(b) - 1
		}
		out = append(out, s.redactLine(b[:i+1])...)
		b = b[i+1:]
	}
	return out
}

func (s *Stream) redactLine(line []byte) []byte {
	if s.inPEM || isPEMBegin(line) {
		begin := !s.inPEM
		s.inPEM = !isPEMEnd(line)
		if begin {
			return []byte("<redacted:private-key>\n")
		}
		return nil
	}
	return []byte(s.o.Redactor.Redact(string(line)))
}

// neutralise cleans whole lines (Raw: leaves them), and says how many
// lines it changed.
func (s *Stream) neutralise(b []byte) ([]byte, int64) {
	if s.o.Raw {
		return b, 0
	}
	text, changed := neutralise(string(b))
	return []byte(text), int64(changed)
}

// processHead redacts raw bytes and shows the lines they end, as long as
// they fit in the head; the first that does not closes it.
func (s *Stream) processHead(raw []byte) {
	s.line = append(s.line, s.redact(raw)...)
	end := bytes.LastIndexByte(s.line, '\n') + 1
	shown := s.showLines(s.line[:end])
	// Cleaning never shrinks text: a line already longer than the room
	// left cannot fit.
	if shown < end || len(s.line)-end > s.headLeft || s.headLeft == 0 {
		s.closeHead(s.line[shown:])
		return
	}
	s.line = append(s.line[:0], s.line[end:]...)
}

// showLines shows the whole redacted lines that fit in the head, in one
// write, and returns how many bytes of lines that was.
func (s *Stream) showLines(lines []byte) int {
	if len(lines) == 0 {
		return 0
	}
	if len(lines) <= s.headLeft { // else they cannot all fit: cleaning never shrinks text
		if b, changed := s.neutralise(lines); len(b) <= s.headLeft {
			s.showHead(b, changed)
			return len(lines)
		}
	}
	var show []byte
	var changed int64
	n := 0
	for n < len(lines) {
		i := n + bytes.IndexByte(lines[n:], '\n') + 1
		b, c := s.neutralise(lines[n:i])
		if len(show)+len(b) > s.headLeft {
			break
		}
		show, changed, n = append(show, b...), changed+c, i
	}
	s.showHead(show, changed)
	return n
}

// showHead writes cleaned whole lines in the head.
func (s *Stream) showHead(b []byte, changed int64) {
	s.write(b)
	s.stats.ChangedLines += changed
	s.headLeft -= len(b)
	s.headShown += len(b)
	s.headLines += int64(bytes.Count(b, []byte{'\n'}))
}

// closeHead ends the head: rest, redacted but not shown, starts the tail.
// Redacted text is safe to redact again, so it can share the ring with raw
// bytes.
func (s *Stream) closeHead(rest []byte) {
	s.headLeft, s.headOpen = 0, false
	s.ringWrite(rest)
	s.line = nil
}

// runeBoundary backs off from at to the start of a UTF-8 character.
func runeBoundary(b []byte, at int) int {
	for i := at; i > 0 && i > at-4; i-- {
		if b[i]&0xC0 != 0x80 {
			return i
		}
	}
	return at
}

// ringSize: the tail shows Limit minus what the head showed, plus a margin
// to drop a partial first line from.
func (s *Stream) ringSize() int { return s.o.Limit - s.headShown + holdBack }

func (s *Stream) ringWrite(b []byte) {
	if len(b) == 0 {
		return
	}
	if s.ring == nil {
		s.ring = newRing(s.ringSize())
	}
	s.tailRaw += int64(len(b))
	s.ring.write(b)
}

func (s *Stream) write(b []byte) {
	if s.sinkErr != nil || len(b) == 0 || s.sink == nil {
		return
	}
	if l := s.o.SinkLock; l != nil {
		l.Lock()
		defer l.Unlock()
	}
	_, s.sinkErr = s.sink.Write(b)
}

// endLine ends b, the last of what is shown, with a newline if it lacks
// one (Raw: leaves it), so the next write to a shared sink starts a line.
func (s *Stream) endLine(b []byte) []byte {
	if s.o.Raw || len(b) == 0 || b[len(b)-1] == '\n' {
		return b
	}
	return append(b, '\n')
}

// Close flushes what is held, writes the marker and the cleaned tail, and
// returns the stream's statistics.
func (s *Stream) Close() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.stats
	}
	s.closed = true
	if s.headOpen {
		if len(s.pending) > 0 {
			s.processHead(s.pending)
		}
		s.pending = nil
	}
	if s.headOpen && len(s.line) > 0 {
		// The last line, which the command left without a newline.
		if b, changed := s.neutralise(s.endLine(s.line)); len(b) <= s.headLeft+1 {
			s.showHead(b, changed)
		} else {
			s.closeHead(s.line)
		}
	}
	var tail []byte
	if s.ring != nil {
		tail = s.ring.bytes()
	}
	show := s.o.Limit - s.headShown
	if len(tail) > show {
		// Omitted: keep at most show bytes, starting where no token and no
		// secret is cut in two.
		start := s.tailStart(tail, len(tail)-show)
		dropped := s.tailRaw - int64(len(tail)-start)
		s.stats.OmittedBytes = dropped
		s.stats.OmittedLines = s.stats.Lines - s.headLines - int64(bytes.Count(tail[start:], []byte{'\n'}))
		s.stats.Truncated = true
		tail = tail[start:]
		s.write([]byte(fmt.Sprintf("\n[... %d bytes, %d lines omitted ...]\n", dropped, s.stats.OmittedLines)))
	}
	if len(tail) > 0 {
		// Its first line is judged from where the tail starts, which
		// starts a line (after the marker, or after the head's last line).
		s.inPEM = false
		b, changed := s.neutralise(s.endLine(s.redact(tail)))
		s.stats.ChangedLines += changed
		s.write(b)
	}
	if s.o.Ceiling.Hit() {
		s.stats.Truncated = true
		s.write([]byte(fmt.Sprintf("\n[... output ceiling of %d bytes reached: the command was stopped ...]\n", s.o.Ceiling.Limit)))
	}
	return s.stats
}
