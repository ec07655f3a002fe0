package egress

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/egress/allow"
)

// upstreams is the one upstream connection a client's plain requests
// reuse while they go to the same host and port.
type upstreams struct {
	t      target
	conn   *upConn
	br     *bufio.Reader
	stop   func() bool
	reused bool // the connection carried a request before this one
}

func (u *upstreams) close() {
	if u.conn != nil {
		u.stop()
		u.conn.Close()
		u.conn, u.br = nil, nil
	}
}

// forward judges one plain (absolute-form) request and relays it and its
// response. It returns whether the client connection may carry another.
func (p *Proxy) forward(c *timedConn, req *http.Request, h head, ups *upstreams) bool {
	d := Decision{Method: req.Method}
	t, why := p.plainTarget(req, h, &d)
	if b := p.brokerOn(t.host); why == "" && b != nil {
		why = "brokered " + b.Name + " is bound to " + t.host + ", which is served over HTTPS only (a secret never goes in clear)"
	}
	if why == "" {
		why = p.upstreamFor(t, ups)
	}
	if why != "" {
		p.refuse(c, d, why)
		return false
	}
	rule, _ := allow.Match(p.cfg.Rules, t.host, t.port)
	d.Allowed, d.Rule, d.Addr = true, rule.From, ups.conn.RemoteAddr().String()
	up0, down0 := ups.conn.up.Load(), ups.conn.down.Load()
	keep, stale := p.relay(c, req, ups, ups.reused)
	if stale {
		// The upstream closed the reused connection while it was idle,
		// before answering; a request without a body is sent once more.
		ups.close()
		if why := p.upstreamFor(t, ups); why != "" {
			p.refuse(c, d, why)
			return false
		}
		d.Addr = ups.conn.RemoteAddr().String()
		up0, down0 = 0, 0
		keep, _ = p.relay(c, req, ups, false)
	}
	d.BytesUp, d.BytesDown = ups.conn.up.Load()-up0, ups.conn.down.Load()-down0
	d.Cut = p.cutReason(ups.conn)
	if !keep || d.Cut != "" {
		ups.close()
	}
	p.record(d)
	return keep && d.Cut == ""
}

// upstreamFor makes ups hold a connection to t: the one it holds when it
// goes there already (its name was decided and its address pinned when it
// was dialled), else a new one decided afresh. It says why not, or "".
func (p *Proxy) upstreamFor(t target, ups *upstreams) string {
	if ups.conn != nil && ups.t == t && p.ctx.Err() == nil && p.bytes.Load() < p.lim.MaxBytes {
		ups.reused = true
		return ""
	}
	ups.close()
	_, addrs, why := p.decide(t)
	if why != "" {
		return why
	}
	up, why := p.dial(t, addrs)
	if why != "" {
		return why
	}
	ups.t, ups.conn, ups.br, ups.reused = t, up, bufio.NewReaderSize(up, bufSize), false
	ups.stop = context.AfterFunc(p.ctx, func() { up.Close() })
	return ""
}

// plainTarget checks a plain request's target and fills d's host and port.
func (p *Proxy) plainTarget(req *http.Request, h head, d *Decision) (target, string) {
	u := req.URL
	switch {
	case u.Scheme == "https":
		return target{}, "an https:// URL in a plain proxy request; HTTPS goes through CONNECT"
	case u.Scheme != "http" || u.Host == "":
		return target{}, "not a proxy request (the target must be an absolute http:// URL); set http_proxy"
	case u.User != nil:
		return target{}, "credentials in the URL; send them in a header"
	}
	host, port := u.Host, "80"
	if hh, pp, err := net.SplitHostPort(u.Host); err == nil {
		host, port = hh, pp
	}
	t, shown, why := parseTarget(host, port)
	d.Host, d.Port = shown, t.port
	if why == "" {
		why = hostHeaderDiffers(h.hosts, t, 80)
	}
	return t, why
}

// hopByHop are the headers that end at the proxy (RFC 9110 7.6.1), and
// the upgrade that would turn a request into a raw tunnel.
var hopByHop = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func stripHopByHop(hd http.Header) {
	for _, v := range hd.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			hd.Del(strings.TrimSpace(name))
		}
	}
	for _, name := range hopByHop {
		hd.Del(name)
	}
	for name := range hd {
		if strings.HasPrefix(textproto.CanonicalMIMEHeaderKey(name), "Proxy-") {
			delete(hd, name)
		}
	}
}

// relay sends req on the upstream and its response back. It returns
// whether both connections may carry another request, and whether a
// reused upstream failed before answering a request without a body (the
// caller may send it again on a new one).
func (p *Proxy) relay(c *timedConn, req *http.Request, ups *upstreams, reused bool) (keep, stale bool) {
	stripHopByHop(req.Header)
	req.Host = ups.t.host
	if ups.t.port != 80 {
		req.Host = ups.t.String()
	}
	req.Header.Del("Expect") // the body is streamed at once; no interim answer is awaited
	noBody := req.Body == nil || req.Body == http.NoBody
	down0 := ups.conn.down.Load()
	if err := req.Write(ups.conn); err != nil {
		if reused && noBody && !ups.conn.cut.Load() {
			return false, true
		}
		writeStatus(c, http.StatusBadGateway, Decision{Host: ups.t.host, Port: ups.t.port, Reason: "sending the request upstream failed: " + oneLine(err.Error())})
		return false, false
	}
	resp, why := p.readResponse(ups.br, req)
	if why != "" {
		if reused && noBody && ups.conn.down.Load() == down0 && !ups.conn.cut.Load() {
			return false, true
		}
		writeStatus(c, http.StatusBadGateway, Decision{Host: ups.t.host, Port: ups.t.port, Reason: why})
		return false, false
	}
	defer resp.Body.Close()
	stripHopByHop(resp.Header)
	if err := resp.Write(c); err != nil {
		return false, false
	}
	return !req.Close && !resp.Close, false
}

// readResponse reads the final response (interim 1xx ones are dropped: the
// client asked for none, Expect was removed) with the same strict head
// checks as requests. A protocol switch is refused.
func (p *Proxy) readResponse(br *bufio.Reader, req *http.Request) (*http.Response, string) {
	for range 5 {
		raw, err := peekHead(br)
		if err != nil {
			return nil, "reading the upstream's response: " + oneLine(err.Error())
		}
		if _, err := scanHead(raw); err != nil {
			return nil, "malformed upstream response: " + err.Error()
		}
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return nil, "malformed upstream response: " + oneLine(err.Error())
		}
		switch {
		case resp.StatusCode == http.StatusSwitchingProtocols:
			return nil, "the upstream switched protocols; only HTTP is relayed"
		case resp.StatusCode >= 100 && resp.StatusCode < 200:
			continue
		}
		return resp, ""
	}
	return nil, "the upstream sent too many interim responses"
}
