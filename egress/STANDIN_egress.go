package egress

// STAND-IN for the proxy being written in /work/wt/proxy (issue 36):
// exactly the agreed API, minimal (CONNECT and absolute-form HTTP, names
// matched and resolved here, non-public addresses refused unless listed
// in TestUpstreams). The merger drops this file for theirs.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/triage-sandbox/triage-sandbox/egress/allow"
)

// Config is what a proxy decides with.
type Config struct {
	Rules    []allow.Rule
	Resolver interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	}
	Dial          func(ctx context.Context, network, addr string) (net.Conn, error)
	TestUpstreams []netip.Prefix
	Limits        Limits
}

// Limits bound a run's network use; zero: defaults.
type Limits struct {
	MaxConns    int
	MaxBytes    int64
	MaxDuration time.Duration
}

// Decision is one connection's verdict.
type Decision struct {
	Host      string `json:"host"`
	Port      int    `json:"port"`
	Allowed   bool   `json:"allowed"`
	Reason    string `json:"reason,omitempty"`
	Rule      string `json:"rule,omitempty"`
	Addr      string `json:"addr,omitempty"`
	BytesUp   int64  `json:"bytes_up"`
	BytesDown int64  `json:"bytes_down"`
}

// Proxy is a running proxy.
type Proxy struct {
	cfg       Config
	ln        net.Listener
	ctx       context.Context
	cancel    context.CancelFunc
	mu        sync.Mutex
	decisions []*Decision
	conns     map[net.Conn]bool
	wg        sync.WaitGroup
}

// Listen starts a proxy on a unix socket at socketPath (mode 0600).
func Listen(ctx context.Context, cfg Config, socketPath string) (*Proxy, error) {
	ln, err := net.Listen("unix", socketPath)
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	if err := os.Chmod(socketPath, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &Proxy{cfg: cfg, ln: ln, ctx: pctx, cancel: cancel, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns[c] = true
		p.mu.Unlock()
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.handle(c)
			p.mu.Lock()
			delete(p.conns, c)
			p.mu.Unlock()
			c.Close()
		}()
	}
}

func (p *Proxy) record(d *Decision) {
	p.mu.Lock()
	p.decisions = append(p.decisions, d)
	p.mu.Unlock()
}

func (p *Proxy) handle(c net.Conn) {
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	host, portS := req.URL.Hostname(), req.URL.Port()
	if req.Method == http.MethodConnect {
		host, portS, err = net.SplitHostPort(req.Host)
		if err != nil {
			fmt.Fprint(c, "HTTP/1.1 400 Bad Request\r\n\r\n")
			return
		}
	} else if portS == "" {
		portS = "80"
	}
	port, _ := strconv.Atoi(portS)
	d := &Decision{Host: host, Port: port}
	p.record(d)
	up, err := p.dial(d)
	if err != nil {
		p.mu.Lock()
		d.Reason = err.Error()
		p.mu.Unlock()
		fmt.Fprintf(c, "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\ntriage-sandbox egress: %s:%d refused: %s\n", host, port, err)
		return
	}
	defer up.Close()
	var toUp io.Reader = br
	if req.Method == http.MethodConnect {
		fmt.Fprint(c, "HTTP/1.1 200 Connection established\r\n\r\n")
	} else {
		req.RequestURI = ""
		if err := req.Write(up); err != nil {
			return
		}
	}
	done := make(chan struct{})
	go func() {
		n, _ := io.Copy(up, toUp)
		atomic.AddInt64(&d.BytesUp, n)
		if cw, ok := up.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		close(done)
	}()
	n, _ := io.Copy(c, up)
	atomic.AddInt64(&d.BytesDown, n)
	c.Close()
	<-done
}

func (p *Proxy) dial(d *Decision) (net.Conn, error) {
	r, ok := allow.Match(p.cfg.Rules, d.Host, d.Port)
	if !ok {
		return nil, errors.New("not on the allow-list")
	}
	var res interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	} = net.DefaultResolver
	if p.cfg.Resolver != nil {
		res = p.cfg.Resolver
	}
	addrs, err := res.LookupNetIP(p.ctx, "ip", d.Host)
	if err != nil || len(addrs) == 0 {
		return nil, fmt.Errorf("the name does not resolve")
	}
	a := addrs[0].Unmap()
	if !p.upstreamOK(a) {
		return nil, fmt.Errorf("resolves to %s, not a public address", a)
	}
	dial := p.cfg.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	addr := net.JoinHostPort(a.String(), strconv.Itoa(d.Port))
	c, err := dial(p.ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	p.mu.Lock()
	d.Allowed, d.Rule, d.Addr = true, r.From, addr
	p.mu.Unlock()
	return c, nil
}

func (p *Proxy) upstreamOK(a netip.Addr) bool {
	for _, pfx := range p.cfg.TestUpstreams {
		if pfx.Contains(a) {
			return true
		}
	}
	return a.IsGlobalUnicast() && !a.IsPrivate()
}

// Decisions are the connections decided so far.
func (p *Proxy) Decisions() []Decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Decision, len(p.decisions))
	for i, d := range p.decisions {
		out[i] = *d
		out[i].BytesUp, out[i].BytesDown = atomic.LoadInt64(&d.BytesUp), atomic.LoadInt64(&d.BytesDown)
	}
	return out
}

// Close ends every tunnel.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.cancel()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}
