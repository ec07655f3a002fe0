package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/triage-sandbox/triage-sandbox/egress/allow"
)

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || p.ctx.Err() != nil {
				return
			}
			// Out of descriptors, say: wait a little, as net/http does,
			// rather than stop serving the run.
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		select {
		case p.slots <- struct{}{}:
		default:
			p.refuseBusy(c)
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer func() { <-p.slots }()
			p.serveConn(c)
		}()
	}
}

// busySlots bounds the goroutines that answer connections past
// MaxConcurrent; past them a connection is closed unanswered.
const busySlots = 8

// refuseBusy answers a connection past MaxConcurrent with a 403 after
// reading its head (briefly), so the client reads the answer instead of a
// reset.
func (p *Proxy) refuseBusy(c net.Conn) {
	why := fmt.Sprintf("more than %d connections at once (the run's bound)", p.lim.MaxConcurrent)
	select {
	case p.busy <- struct{}{}:
	default:
		p.deny(Decision{}, why)
		c.Close()
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer func() { <-p.busy }()
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, _ = peekHead(bufio.NewReaderSize(c, bufSize))
		p.refuse(c, Decision{}, why)
	}()
}

// serveConn reads requests from one client connection until it ends, a
// tunnel takes it over or a request is refused.
func (p *Proxy) serveConn(raw net.Conn) {
	c := &timedConn{Conn: raw}
	defer c.Close()
	stop := context.AfterFunc(p.ctx, func() { c.Close() })
	defer stop()
	br := bufio.NewReaderSize(c, bufSize)
	var ups upstreams
	defer ups.close()
	for p.ctx.Err() == nil {
		c.within(headTime)
		raw, err := peekHead(br)
		if err != nil {
			if errors.Is(err, errHeadTooLarge) {
				p.refuse(c, Decision{}, "request head larger than 16 kB")
			} else if br.Buffered() > 0 {
				p.refuse(c, Decision{}, "request head incomplete: "+err.Error())
			}
			return
		}
		h, err := scanHead(raw)
		if err != nil {
			p.refuse(c, Decision{}, "malformed request: "+err.Error())
			return
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			p.refuse(c, Decision{}, "malformed request: "+oneLine(err.Error()))
			return
		}
		c.within(0)
		if req.ProtoMajor != 1 {
			p.refuse(c, Decision{Method: req.Method}, "only HTTP/1.x proxy requests are served")
			return
		}
		if why := p.unauthorized(req); why != "" {
			p.refuseAuth(c, Decision{Method: req.Method}, why)
			return
		}
		if req.Method == http.MethodConnect {
			p.connect(c, br, req, h)
			return
		}
		if !p.forward(c, req, h, &ups) {
			return
		}
	}
}

// target is a checked destination: a normalised name and port.
type target struct {
	host string
	port int
}

func (t target) String() string { return net.JoinHostPort(t.host, strconv.Itoa(t.port)) }

// parseTarget checks host and port as the client gave them. On failure
// the returned name is safe to print (quoted and clipped) for the record.
func parseTarget(host, port string) (target, string, string) {
	shown := strconv.QuoteToASCII(clip(host))
	pn, err := strconv.Atoi(port)
	if err != nil || pn < 1 || pn > 65535 || strings.TrimLeft(port, "0123456789") != "" {
		return target{}, shown, "port " + strconv.QuoteToASCII(clip(port)) + " is not a number from 1 to 65535"
	}
	if strings.HasPrefix(host, "[") {
		host = strings.Trim(host, "[]")
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return target{port: pn}, shown, "an IP address as target; the network allow-list takes names (allow the name the address belongs to)"
	}
	name, err := allow.Normalize(host)
	if err != nil {
		return target{port: pn}, shown, oneLine(err.Error())
	}
	return target{host: name, port: pn}, name, ""
}

// hostHeaderDiffers says why a Host header does not name t, or "".
func hostHeaderDiffers(hosts []string, t target, defPort int) string {
	switch len(hosts) {
	case 0:
		return ""
	case 1:
	default:
		return "more than one Host header"
	}
	h, port := hosts[0], strconv.Itoa(defPort)
	if hh, pp, err := net.SplitHostPort(h); err == nil {
		h, port = hh, pp
	}
	name, err := allow.Normalize(h)
	if err != nil || name != t.host || port != strconv.Itoa(t.port) {
		return "Host header " + strconv.QuoteToASCII(clip(hosts[0])) + " differs from the target " + t.String() + " (domain fronting)"
	}
	return ""
}

// decide checks t against the allow-list, the run's bounds and where its
// name resolves, and returns the rule and the addresses to dial.
func (p *Proxy) decide(t target) (allow.Rule, []netip.Addr, string) {
	rule, ok := allow.Match(p.cfg.Rules, t.host, t.port)
	if !ok {
		return rule, nil, "not on the network allow-list"
	}
	if why := p.bounds(); why != "" {
		return rule, nil, why
	}
	ctx, cancel := context.WithTimeout(p.ctx, resolveTime)
	defer cancel()
	// Rooted, so no search domain turns a missing name into an inside one.
	addrs, err := p.cfg.Resolver.LookupNetIP(ctx, "ip", t.host+".")
	if err != nil {
		// The error's text would name the host's DNS server; the sandbox
		// reads this reason.
		var de *net.DNSError
		if errors.As(err, &de) {
			return rule, nil, "cannot resolve: " + oneLine(de.Err)
		}
		return rule, nil, "cannot resolve"
	}
	if len(addrs) == 0 {
		return rule, nil, "resolves to no address"
	}
	own, err := ownAddrs()
	if err != nil {
		return rule, nil, "cannot list this host's addresses to refuse them: " + oneLine(err.Error())
	}
	for _, a := range addrs {
		if why := addrRefused(a, own, p.cfg.TestUpstreams); why != "" {
			return rule, nil, "resolves to " + a.String() + ", " + why
		}
	}
	return rule, addrs, ""
}

// bounds says which of the run's bounds is used up, or "".
func (p *Proxy) bounds() string {
	switch {
	case p.ctx.Err() != nil:
		return "the run's network time is up"
	case p.bytes.Load() >= p.lim.MaxBytes:
		return fmt.Sprintf("the run's byte bound (%d) is used up", p.lim.MaxBytes)
	case p.conns.Load() >= int64(p.lim.MaxConns):
		return fmt.Sprintf("the run's connection bound (%d) is used up", p.lim.MaxConns)
	}
	return ""
}

// dial connects to t at the first of addrs that answers; the address is
// pinned: nothing resolves the name again.
func (p *Proxy) dial(t target, addrs []netip.Addr) (*upConn, string) {
	if p.conns.Add(1) > int64(p.lim.MaxConns) {
		return nil, fmt.Sprintf("the run's connection bound (%d) is used up", p.lim.MaxConns)
	}
	var errs []string
	for _, a := range addrs {
		ctx, cancel := context.WithTimeout(p.ctx, dialTime)
		c, err := p.cfg.Dial(ctx, "tcp", netip.AddrPortFrom(a, uint16(t.port)).String())
		cancel()
		if err == nil {
			up := &upConn{timedConn: timedConn{Conn: c}, p: p}
			up.last.Store(time.Now().UnixNano())
			return up, ""
		}
		errs = append(errs, oneLine(err.Error()))
	}
	return nil, "cannot connect: " + strings.Join(errs, "; ")
}

// cutReason says why an allowed connection ended early, or "".
func (p *Proxy) cutReason(up *upConn) string {
	switch {
	case up != nil && up.cut.Load():
		return fmt.Sprintf("cut: the run's byte bound (%d) was passed", p.lim.MaxBytes)
	case errors.Is(p.ctx.Err(), context.DeadlineExceeded):
		return "cut: the run's network time ran out"
	}
	// Ended by Close: the run is over, which is no cut (an idle kept-alive
	// tunnel ends that way too).
	return ""
}

// refuse records d as refused for why and answers the client with a 403
// naming the target and the reason.
func (p *Proxy) refuse(c net.Conn, d Decision, why string) {
	d.Allowed, d.Reason = false, why
	p.record(d)
	writeStatus(c, http.StatusForbidden, d)
}

func writeStatus(c net.Conn, code int, d Decision) {
	what := "the request"
	if d.Host != "" {
		what = net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
	}
	verb := "refused"
	if code != http.StatusForbidden {
		verb = "could not relay"
	}
	body := "triage-sandbox egress proxy " + verb + " " + what + ": " + d.Reason + "\n"
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		code, http.StatusText(code), len(body), body)
}

// oneLine keeps an error from a resolver or dialer to one short line.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	return clip(s)
}

func clip(s string) string {
	const max = 200
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}

// closeWrite half-closes c when it can, so the other side sees the end of
// what was sent while its answer still flows back.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

// pipe copies src to dst until either ends. A read that timed out while
// busy says the other direction still moves goes on.
func pipe(dst io.Writer, src io.Reader, busy func() bool) error {
	buf := make([]byte, 64<<10)
	for {
		_, err := io.CopyBuffer(dst, src, buf)
		var ne net.Error
		if err != nil && errors.As(err, &ne) && ne.Timeout() && busy() {
			continue
		}
		return err
	}
}
