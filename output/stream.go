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
}

// maxHold is how much of a line without newline is held for redaction
// before it is processed anyway, cut about holdBack bytes before its end
// (forcedCut); holdBack is also the margin the ring keeps before the tail.
const (
	maxHold  = 64 << 10
	holdBack = 1 << 10
)

// Stream is one output stream of a run. The head is redacted, neutralised
// and streamed to the sink as it comes; once it is full, raw bytes go to a
// ring that keeps the latest ones, and only what the ring still holds at the
// end is redacted and shown. Memory stays bounded whatever the command
// prints, work is spent only on what is shown, and Write never blocks on
// it, so the command is always drained.
type Stream struct {
	mu   sync.Mutex
	sink io.Writer
	o    Options

	pending []byte // head phase: raw bytes awaiting a newline
	inPEM   bool   // inside a private key block
	neut    neutraliser

	headCap, headLeft int
	headOpen          bool
	headRaw           int64 // raw bytes consumed by the head phase
	headLines         int64 // newlines shown in the head
	headShown         int   // bytes shown in the head

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
	return &Stream{sink: sink, o: o, headCap: o.Limit / 2, headLeft: o.Limit / 2, headOpen: true}
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
	s.headRaw += int64(n)
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
	if !s.headOpen && len(s.pending) > 0 {
		// The head closed: what was waiting for a newline starts the tail.
		s.headRaw -= int64(len(s.pending))
		s.ringWrite(s.pending)
		s.pending = nil
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

// clean redacts and neutralises complete lines; a block that touches a
// private key block goes line by line.
func (s *Stream) clean(b []byte) []byte {
	if !s.inPEM && !bytes.Contains(b, pemKey) {
		return s.cleanLine(b)
	}
	var out []byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			i = len(b) - 1
		}
		out = append(out, s.cleanLine(b[:i+1])...)
		b = b[i+1:]
	}
	return out
}

func (s *Stream) cleanLine(line []byte) []byte {
	if s.inPEM || isPEMBegin(line) {
		begin := !s.inPEM
		s.inPEM = !isPEMEnd(line)
		s.neut.midLine = false // what follows starts a line
		if begin {
			return []byte("<redacted:private-key>\n")
		}
		return nil
	}
	text := s.o.Redactor.Redact(string(line))
	if !s.o.Raw {
		text = s.neut.clean(text)
	}
	return []byte(text)
}

// processHead cleans raw lines and streams them while the head has room;
// the cleaned text that does not fit starts the tail.
func (s *Stream) processHead(raw []byte) {
	b := s.clean(raw)
	take := len(b)
	if take > s.headLeft {
		take = headCut(b, s.headLeft)
		s.headLeft = 0
	} else {
		s.headLeft -= take
	}
	s.write(b[:take])
	s.headShown += take
	s.headLines += int64(bytes.Count(b[:take], []byte{'\n'}))
	if s.headLeft == 0 {
		s.headOpen = false
		// Cleaned text is safe to clean again (both passes are idempotent),
		// so it can share the ring with raw bytes.
		s.ringWrite(b[take:])
	}
}

// headCut picks where the head ends within limit (< len(b)): after the last
// newline if there is one in the last quarter, else on a character boundary
// and never inside a run of token characters: before the run, however long.
func headCut(b []byte, limit int) int {
	if i := bytes.LastIndexByte(b[:limit], '\n'); i >= 0 && i >= limit*3/4 {
		return i + 1
	}
	return runStart(b, runeBoundary(b, limit))
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
	_, s.sinkErr = s.sink.Write(b)
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
		s.neut.midLine = false
		s.inPEM = false
		s.write(s.clean(tail))
	}
	if s.o.Ceiling.Hit() {
		s.stats.Truncated = true
		s.write([]byte(fmt.Sprintf("\n[... output ceiling of %d bytes reached: the command was stopped ...]\n", s.o.Ceiling.Limit)))
	}
	return s.stats
}
