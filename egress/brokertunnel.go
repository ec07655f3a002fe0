package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
)

// helloConn is the client's connection with the ClientHello the proxy
// already read put back in front.
type helloConn struct {
	net.Conn
	r io.Reader
}

func (c *helloConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// brokerUp is the upstream of a brokered tunnel: real TLS, verified.
type brokerUp struct {
	raw    *upConn
	tls    *tls.Conn
	br     *bufio.Reader
	reused bool
}

func (u *brokerUp) close() {
	if u != nil {
		u.raw.Close()
	}
}

// brokerTunnel serves a CONNECT to a host a secret is bound to: TLS with
// the sandbox under a leaf of the run's CA, HTTP/1.1 only, each request
// judged and sent on upstream over TLS verified against the system roots
// (Config.BrokerRoots in tests). d is the CONNECT's decision, recorded
// when the tunnel ends; each request is recorded too.
func (p *Proxy) brokerTunnel(c *timedConn, br *bufio.Reader, hello []byte, t target, addrs []netip.Addr, d Decision, b *Broker) {
	tc := tls.Server(&helloConn{Conn: c, r: io.MultiReader(bytes.NewReader(hello), br)}, &tls.Config{
		Certificates: []tls.Certificate{*p.ca.leaves[t.host]},
		NextProtos:   []string{"http/1.1"}, // a client offering only h2 is refused in the handshake
		MinVersion:   tls.VersionTLS12,
	})
	c.within(helloTime)
	err := tc.HandshakeContext(p.ctx)
	c.within(0)
	if err != nil {
		p.deny(d, "TLS with the sandbox for brokered "+b.Name+" failed: "+oneLine(err.Error()))
		return
	}
	defer tc.Close()
	d.Allowed, d.Brokered = true, b.Name
	var up *brokerUp
	var upBytes, downBytes int64
	defer func() {
		if up != nil {
			upBytes, downBytes = upBytes+up.raw.up.Load(), downBytes+up.raw.down.Load()
			d.Cut = p.cutReason(up.raw)
		}
		up.close()
		d.BytesUp, d.BytesDown = upBytes, downBytes
		p.record(d)
	}()
	tbr := bufio.NewReaderSize(tc, bufSize)
	for p.ctx.Err() == nil {
		next, keep := p.brokerRequest(c, tc, tbr, t, addrs, d.Rule, b, up)
		if next != up && up != nil {
			upBytes, downBytes = upBytes+up.raw.up.Load(), downBytes+up.raw.down.Load()
			up.close()
		}
		up = next
		if d.Addr == "" && up != nil {
			d.Addr = up.raw.RemoteAddr().String()
		}
		if !keep {
			return
		}
	}
}

// brokerRequest judges and relays one request in a brokered tunnel. It
// returns the upstream to use for the next one and whether there may be one.
func (p *Proxy) brokerRequest(c *timedConn, tc *tls.Conn, tbr *bufio.Reader, t target, addrs []netip.Addr, rule string, b *Broker, up *brokerUp) (*brokerUp, bool) {
	c.within(headTime)
	raw, err := peekHead(tbr)
	rd := Decision{Host: t.host, Port: t.port, Rule: rule}
	if err != nil {
		if errors.Is(err, errHeadTooLarge) {
			p.refuse(tc, rd, "request head larger than 16 kB")
		} else if tbr.Buffered() > 0 {
			p.refuse(tc, rd, "request head incomplete: "+oneLine(err.Error()))
		}
		return up, false
	}
	h, err := scanHead(raw)
	if err != nil {
		p.refuse(tc, rd, "malformed request: "+err.Error())
		return up, false
	}
	req, err := http.ReadRequest(tbr)
	c.within(0)
	if err != nil {
		p.refuse(tc, rd, "malformed request: "+oneLine(err.Error()))
		return up, false
	}
	rd.Method = req.Method
	why := innerRequestRefused(req, h, t)
	used := false
	if why == "" {
		used, why = substitute(b, req.Method, req.Header)
	}
	if why != "" {
		p.refuse(tc, rd, why)
		return up, false
	}
	if used {
		rd.Brokered = b.Name
	}
	prepareInner(req, t, used)
	noBody := req.Body == nil || req.Body == http.NoBody
	for attempt := 0; ; attempt++ {
		if up == nil {
			var why string
			if up, why = p.brokerDial(t, addrs); why != "" {
				p.refuse(tc, rd, why)
				return nil, false
			}
		}
		up0, down0 := up.raw.up.Load(), up.raw.down.Load()
		resp, why, stale := p.brokerExchange(req, up)
		if stale && noBody && attempt == 0 {
			// The upstream closed the kept-alive connection while it was
			// idle, before answering: a request without a body goes once
			// more, on a new connection.
			up.close()
			up = nil
			continue
		}
		if why != "" {
			// An upstream's error text may quote the value: masked for the
			// sandbox here, for the record in record.
			shown := rd
			shown.Reason = p.redact(why)
			writeStatus(tc, http.StatusBadGateway, shown)
			p.deny(rd, why)
			return up, false
		}
		rd.Allowed, rd.Addr = true, up.raw.RemoteAddr().String()
		keep := p.brokerRespond(tc, req, resp, used, &rd)
		rd.BytesUp, rd.BytesDown = up.raw.up.Load()-up0, up.raw.down.Load()-down0
		rd.Cut = p.cutReason(up.raw)
		p.record(rd)
		return up, keep && rd.Cut == ""
	}
}

// innerRequestRefused says why a request inside a brokered tunnel is not
// relayed, or "": HTTP/1.x in origin form, one Host header naming the
// tunnel's host.
func innerRequestRefused(req *http.Request, h head, t target) string {
	switch {
	case req.ProtoMajor != 1:
		return "only HTTP/1.1 is served in a brokered tunnel"
	case req.Method == http.MethodConnect:
		return "a CONNECT inside a tunnel"
	case !strings.HasPrefix(req.RequestURI, "/"):
		return "the request target must be a path (origin form) inside a tunnel"
	case len(h.hosts) != 1:
		return "a request inside a tunnel needs exactly one Host header"
	}
	return hostHeaderDiffers(h.hosts, t, 443)
}

// prepareInner makes req ready to go upstream: hop-by-hop headers and
// trailers dropped, Host canonical, no Expect; a request holding a secret
// asks for an uncompressed answer, so the value can be looked for in it.
func prepareInner(req *http.Request, t target, used bool) {
	stripHopByHop(req.Header)
	req.Trailer = nil
	req.Host = t.host
	if t.port != 443 {
		req.Host = t.String()
	}
	req.Header.Del("Expect")
	if used {
		req.Header.Set("Accept-Encoding", "identity")
	}
}

// brokerDial connects to the tunnel's host at a pinned address and opens
// TLS to it, verified for its name.
func (p *Proxy) brokerDial(t target, addrs []netip.Addr) (*brokerUp, string) {
	if why := p.bounds(); why != "" {
		return nil, why
	}
	raw, why := p.dial(t, addrs)
	if why != "" {
		return nil, why
	}
	tc := tls.Client(raw, &tls.Config{
		ServerName: t.host,
		RootCAs:    p.cfg.BrokerRoots, // nil: the system roots
		NextProtos: []string{"http/1.1"},
		MinVersion: tls.VersionTLS12,
	})
	ctx, cancel := context.WithTimeout(p.ctx, dialTime)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, "TLS to the upstream failed: " + oneLine(err.Error())
	}
	return &brokerUp{raw: raw, tls: tc, br: bufio.NewReaderSize(tc, bufSize)}, ""
}

// brokerExchange sends req upstream and reads the response's head. stale:
// a reused connection failed before a byte of an answer.
func (p *Proxy) brokerExchange(req *http.Request, up *brokerUp) (*http.Response, string, bool) {
	reused := up.reused
	up.reused = true
	down0 := up.raw.down.Load()
	if err := req.Write(up.tls); err != nil {
		return nil, "sending the request upstream failed: " + oneLine(err.Error()), reused && !up.raw.cut.Load()
	}
	resp, why := p.readResponse(up.br, req)
	if why != "" {
		stale := reused && up.raw.down.Load()-down0 < 64 && !up.raw.cut.Load() // a TLS close alert at most
		return nil, why, stale
	}
	return resp, "", false
}

// brokerRespond passes resp back with every secret's value masked in its
// headers and body. A response to a request that held the value must be
// uncompressed (the proxy asked for it): else the value could pass
// unseen, and the answer is refused. It returns whether both connections
// may carry another request.
func (p *Proxy) brokerRespond(tc *tls.Conn, req *http.Request, resp *http.Response, used bool, rd *Decision) bool {
	defer resp.Body.Close()
	if ce := resp.Header.Get("Content-Encoding"); used && ce != "" && !strings.EqualFold(ce, "identity") {
		rd.Allowed = false
		rd.Reason = "the upstream sent a compressed (" + strconv.QuoteToASCII(clip(ce)) + ") answer to a brokered request; it could not be checked for the secret"
		writeStatus(tc, http.StatusBadGateway, *rd)
		return false
	}
	stripHopByHop(resp.Header)
	for name, vs := range resp.Header {
		for i, v := range vs {
			vs[i] = p.redact(v)
		}
		if r := p.redact(name); r != name {
			delete(resp.Header, name)
		}
	}
	resp.Trailer = nil
	resp.Body = &maskReader{r: resp.Body, p: p}
	if err := resp.Write(tc); err != nil {
		return false
	}
	return !req.Close && !resp.Close
}

// maskReader masks every secret's value in a stream, across reads. Each
// mask is as long as its value, so a body keeps its length.
type maskReader struct {
	r       io.ReadCloser
	p       *Proxy
	buf     []byte
	pending []byte // read and masked, held back: may end in a value's start
	out     []byte // masked, ready
	err     error
}

func (m *maskReader) Read(b []byte) (int, error) {
	for len(m.out) == 0 {
		if m.err != nil {
			return 0, m.err
		}
		if m.buf == nil {
			m.buf = make([]byte, 64<<10)
		}
		n, err := m.r.Read(m.buf)
		m.err = err
		m.pending = append(m.pending, m.buf[:n]...)
		m.p.maskBytes(m.pending)
		keep := 0
		if err == nil {
			// Hold back what could be the start of a value cut by the read.
			keep = min(len(m.pending), m.p.longestValue()-1)
		}
		m.out = append(m.out[:0], m.pending[:len(m.pending)-keep]...)
		m.pending = append(m.pending[:0], m.pending[len(m.pending)-keep:]...)
	}
	n := copy(b, m.out)
	m.out = m.out[n:]
	return n, nil
}

func (m *maskReader) Close() error { return m.r.Close() }
