package egress

import (
	"bufio"
	"errors"
	"fmt"
	"net/textproto"
	"strings"
)

// maxHead bounds a request's or response's head (request line or status
// line and headers); the reader's buffer is larger, so a head that fits
// is always wholly in it.
const (
	maxHead    = 16 << 10
	maxHeaders = 100
	bufSize    = 64 << 10
)

var errHeadTooLarge = fmt.Errorf("head larger than %d bytes", maxHead)

// peekHead returns the head at the front of br without consuming it, so
// http.ReadRequest/ReadResponse then parse the same bytes (and frame the
// body) while scanHead checks what they would hide (a second Host header
// above all: Go keeps the request-URI's host and drops the header).
func peekHead(br *bufio.Reader) ([]byte, error) {
	for n := 1; ; {
		_, err := br.Peek(n) // waits for the n-th byte
		buf, _ := br.Peek(br.Buffered())
		if i := headEnd(buf); i > 0 && i <= maxHead {
			return buf[:i], nil
		}
		if len(buf) >= maxHead {
			return nil, errHeadTooLarge
		}
		if err != nil {
			return nil, err
		}
		n = min(len(buf)+1, maxHead)
	}
}

// headEnd is the length of the head up to and including its blank line
// ("\n\n" or "\n\r\n", as Go's textproto reads it), or 0 when it is not
// complete.
func headEnd(b []byte) int {
	for i := 0; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		if i+1 < len(b) && b[i+1] == '\n' {
			return i + 2
		}
		if i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n' {
			return i + 3
		}
	}
	return 0
}

// head is what scanHead read: the first line's fields and the Host headers.
type head struct {
	first []string // request: method, target, version; response: version, code, reason
	hosts []string // values of every Host header
}

// scanHead checks a head strictly: printable ASCII only, no bare CR, no
// folded lines, no space before a colon, a bounded number of headers.
// Whatever Go's parser would tolerate but a server might read another way
// is refused here.
func scanHead(b []byte) (head, error) {
	var h head
	text := string(b)
	text = strings.TrimSuffix(text, "\n")
	text = strings.TrimSuffix(text, "\r")
	text = strings.TrimSuffix(text, "\n")
	lines := strings.Split(text, "\n")
	if len(lines) > maxHeaders+1 {
		return h, fmt.Errorf("more than %d headers", maxHeaders)
	}
	for i, line := range lines {
		line = strings.TrimSuffix(line, "\r")
		for _, c := range []byte(line) {
			if c < ' ' && c != '\t' || c >= 0x7f {
				return h, fmt.Errorf("line %d holds byte %#02x", i+1, c)
			}
		}
		if i == 0 {
			h.first = strings.SplitN(line, " ", 3)
			if len(h.first) < 3 && !(len(h.first) == 2 && strings.HasPrefix(line, "HTTP/")) {
				return h, errors.New("malformed first line")
			}
			continue
		}
		if line == "" || line[0] == ' ' || line[0] == '\t' {
			return h, fmt.Errorf("line %d is empty or folded", i+1)
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return h, fmt.Errorf("line %d is not a header", i+1)
		}
		if textproto.CanonicalMIMEHeaderKey(name) == "Host" {
			h.hosts = append(h.hosts, strings.Trim(value, " \t"))
		}
	}
	return h, nil
}
