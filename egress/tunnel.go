package egress

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"

	"github.com/triage-sandbox/triage-sandbox/egress/allow"
)

// TLS alert records sent when a tunnel is refused after its 200, when the
// client already speaks TLS: fatal access_denied, or internal_error when
// the upstream could not be reached.
var (
	alertDenied   = []byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 49}
	alertInternal = []byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 80}
)

// connect serves a CONNECT: decided before the 200, the ClientHello
// checked after it, and only then a dial.
func (p *Proxy) connect(c *timedConn, br *bufio.Reader, req *http.Request, h head) {
	d := Decision{Method: http.MethodConnect}
	host, port, err := net.SplitHostPort(req.RequestURI)
	if err != nil {
		d.Host = strconv.QuoteToASCII(clip(req.RequestURI))
		p.refuse(c, d, "CONNECT target is not host:port")
		return
	}
	t, shown, why := parseTarget(host, port)
	d.Host, d.Port = shown, t.port
	if why == "" {
		why = hostHeaderDiffers(h.hosts, t, t.port)
	}
	var rule allow.Rule
	var addrs []netip.Addr
	if why == "" {
		rule, addrs, why = p.decide(t)
	}
	if why != "" {
		p.refuse(c, d, why)
		return
	}
	d.Rule = rule.From
	if _, err := c.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		p.deny(d, "client went away before its tunnel opened")
		return
	}
	c.within(helloTime)
	hello, name, err := readClientHello(br)
	c.within(0)
	switch {
	case errors.Is(err, errNotTLS):
		// The client speaks plain text in the tunnel: answer it in HTTP.
		p.refuse(c, d, "the tunnel did not start with TLS; send plain HTTP as proxy requests (http_proxy), not through CONNECT")
		return
	case err != nil:
		p.deny(d, "TLS ClientHello refused: "+oneLine(err.Error()))
		_, _ = c.Write(alertDenied)
		return
	}
	if sni, err := allow.Normalize(name); err != nil || sni != t.host {
		p.deny(d, "TLS server name "+strconv.QuoteToASCII(clip(name))+" differs from the CONNECT host "+t.host+" (domain fronting)")
		_, _ = c.Write(alertDenied)
		return
	}
	if b := p.brokerOn(t.host); b != nil {
		p.brokerTunnel(c, br, hello, t, addrs, d, b)
		return
	}
	up, why := p.dial(t, addrs)
	if why != "" {
		p.deny(d, why)
		_, _ = c.Write(alertInternal)
		return
	}
	defer up.Close()
	stop := context.AfterFunc(p.ctx, func() { up.Close() })
	defer stop()
	d.Allowed, d.Addr = true, up.RemoteAddr().String()
	if _, err := up.Write(hello); err == nil {
		p.splice(c, br, up)
	}
	d.BytesUp, d.BytesDown, d.Cut = up.up.Load(), up.down.Load(), p.cutReason(up)
	p.record(d)
}

// deny records a refusal whose answer the caller writes itself.
func (p *Proxy) deny(d Decision, why string) {
	d.Allowed, d.Reason = false, why
	p.record(d)
}

// splice copies both ways until the upstream is done or either side fails.
// The client's end of sending half-closes the upstream, whose answer still
// flows back.
func (p *Proxy) splice(c *timedConn, br *bufio.Reader, up *upConn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := p.sendUp(c, br, up); err == nil {
			closeWrite(up.Conn)
		} else {
			up.Close()
		}
	}()
	handled, _ := kernelCopy(c.Conn, up.Conn, up.received, up.busy)
	if !handled {
		_ = pipe(c, up, up.busy)
	}
	c.Close()
	up.Close()
	<-done
}

// sendUp copies the client's bytes to the upstream: first what br read
// ahead past the hello, then the rest through the kernel when it can.
func (p *Proxy) sendUp(c *timedConn, br *bufio.Reader, up *upConn) error {
	if n := br.Buffered(); n > 0 {
		ahead, _ := br.Peek(n)
		if _, err := up.Write(ahead); err != nil {
			return err
		}
		_, _ = br.Discard(n)
	}
	if handled, err := kernelCopy(up.Conn, c.Conn, up.sent, up.busy); handled {
		return err
	}
	return pipe(up, br, up.busy)
}
