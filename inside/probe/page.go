//go:build linux || darwin

package probe

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// The loopback ops serve and fetch one page over HTTP/1.1 written by hand,
// not net/http: this package is in the inside binary, which starts for
// every sandbox (its holder, its supervisor), and net/http brings crypto/tls,
// x509 and http2 whose initialisation every one of those starts would pay
// for two selftest ops. A page and a GET of it need none of it.

// maxHead bounds a request's or a response's head.
const maxHead = 64 << 10

// servePage answers every connection to ln with body, one response a
// connection, until ln is closed.
func servePage(ln net.Listener, contentType, body string, timeout time.Duration) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(timeout))
			if _, err := readHead(bufio.NewReader(c)); err != nil {
				return
			}
			_, _ = fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
				contentType, len(body), body)
		}()
	}
}

// fetchPage GETs / from hostport (a name is resolved as any dial does) and
// returns the status code and the body, which ends with the connection.
func fetchPage(hostport string, timeout time.Duration) (int, []byte, error) {
	c, err := net.DialTimeout("tcp", hostport, timeout)
	if err != nil {
		return 0, nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", hostport); err != nil {
		return 0, nil, err
	}
	br := bufio.NewReader(c)
	head, err := readHead(br)
	if err != nil {
		return 0, nil, err
	}
	// HTTP/1.1 200 OK
	f := strings.Fields(head[0])
	if len(f) < 2 || !strings.HasPrefix(f[0], "HTTP/1.") {
		return 0, nil, fmt.Errorf("not an HTTP response: %q", head[0])
	}
	code, err := strconv.Atoi(f[1])
	if err != nil {
		return 0, nil, fmt.Errorf("status line %q: %w", head[0], err)
	}
	body, err := io.ReadAll(io.LimitReader(br, 1<<20))
	return code, body, err
}

// readHead reads lines up to the blank one that ends an HTTP head, at most
// maxHead bytes; the first is the request or status line. What follows the
// head stays in r.
func readHead(r *bufio.Reader) ([]string, error) {
	var lines []string
	n := 0
	for {
		line, err := r.ReadString('\n')
		if n += len(line); n > maxHead {
			return nil, fmt.Errorf("HTTP head longer than %d bytes", maxHead)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if len(lines) == 0 {
				return nil, errors.New("empty HTTP head")
			}
			return lines, nil
		}
		lines = append(lines, line)
	}
}
