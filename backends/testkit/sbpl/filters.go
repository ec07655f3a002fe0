package sbpl

import (
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Filter decides whether a rule applies to a request.
type Filter interface {
	Match(r *Request, o *Options) bool
}

type (
	// pathMatch: literal, subpath, prefix or regex over Request.Path (or a
	// socket path inside unix-socket).
	pathMatch struct {
		kind string // literal, subpath, prefix, regex
		val  string
		re   *regexp.Regexp
	}
	allOf  []Filter
	anyOf  []Filter
	notOf  struct{ f Filter }
	vnode  string
	ext    string
	target string
	// addr is (local|remote ip|tcp|udp "host:port").
	addr struct {
		local bool
		proto string // ip, tcp, udp
		any   bool   // host "*"; else "localhost"
		port  int    // 0 = any
	}
	// unixSock is (local|remote unix-socket [path filter]).
	unixSock struct {
		local bool
		path  *pathMatch // nil: any socket path
	}
	// name matches mach, sysctl, iokit and POSIX IPC names.
	name struct {
		kind string // global-name, local-name, sysctl-name, iokit-registry-entry-class, ...
		mode string // exact, prefix, regex
		val  string
		re   *regexp.Regexp
	}
	sockDomain string
	sockProto  int
)

func (p *pathMatch) matchString(s string) bool {
	if s == "" {
		return false
	}
	switch p.kind {
	case "literal":
		return s == p.val
	case "subpath":
		return s == p.val || p.val == "/" || strings.HasPrefix(s, p.val+"/")
	case "prefix":
		return strings.HasPrefix(s, p.val)
	case "regex":
		return p.re.MatchString(s)
	}
	return false
}

func (p *pathMatch) Match(r *Request, _ *Options) bool { return p.matchString(r.Path) }

func (a allOf) Match(r *Request, o *Options) bool {
	for _, f := range a {
		if !f.Match(r, o) {
			return false
		}
	}
	return true
}

func (a anyOf) Match(r *Request, o *Options) bool {
	for _, f := range a {
		if f.Match(r, o) {
			return true
		}
	}
	return false
}

func (n notOf) Match(r *Request, o *Options) bool { return !n.f.Match(r, o) }

func (v vnode) Match(r *Request, _ *Options) bool { return r.Vnode != "" && r.Vnode == string(v) }

func (e ext) Match(r *Request, _ *Options) bool { return slices.Contains(r.Extensions, string(e)) }

func (t target) Match(r *Request, _ *Options) bool {
	switch string(t) {
	case "self":
		return r.Target == "self"
	case "same-sandbox":
		return r.Target == "self" || r.Target == "same-sandbox"
	}
	return r.Target == string(t)
}

func (a addr) Match(r *Request, o *Options) bool {
	peer := r.Remote
	if a.local {
		peer = r.Local
		if peer == nil && r.Remote != nil && r.Op == "network-outbound" {
			// An outbound socket is usually unbound when connect() is
			// judged: its source is the unspecified address.
			unspecified := netip.IPv4Unspecified()
			if r.Remote.IP.Is6() {
				unspecified = netip.IPv6Unspecified()
			}
			peer = &Addr{Proto: r.Remote.Proto, IP: unspecified}
		}
	}
	if peer == nil || !peer.IP.IsValid() {
		return false
	}
	if a.proto != "ip" && a.proto != peer.Proto {
		return false
	}
	if a.port != 0 && a.port != peer.Port {
		return false
	}
	return a.any || isLocalhost(peer.IP, o.HostAddrs)
}

// isLocalhost is Seatbelt's "localhost": loopback, the unspecified address
// and every address of the host, never the IPv4-mapped spelling.
func isLocalhost(ip netip.Addr, host []netip.Addr) bool {
	if ip.Is4In6() {
		return false
	}
	return ip.IsLoopback() || ip.IsUnspecified() || slices.Contains(host, ip)
}

func (u unixSock) Match(r *Request, _ *Options) bool {
	p := r.RemoteUnix
	if u.local {
		p = r.LocalUnix
	}
	if p == "" {
		return false
	}
	return u.path == nil || u.path.matchString(p)
}

func (n *name) Match(r *Request, _ *Options) bool {
	if r.Name == "" || !nameKindFits(n.kind, r) {
		return false
	}
	switch n.mode {
	case "prefix":
		return strings.HasPrefix(r.Name, n.val)
	case "regex":
		return n.re.MatchString(r.Name)
	}
	return r.Name == n.val
}

// nameKindFits: local-name filters match only a local (per-process)
// lookup, global-name ones only a global one; other kinds match by operation.
func nameKindFits(kind string, r *Request) bool {
	switch {
	case strings.HasPrefix(kind, "local-name"):
		return r.LocalName
	case strings.HasPrefix(kind, "global-name"):
		return !r.LocalName && (r.Op == "mach-lookup" || r.Op == "mach-register")
	case strings.HasPrefix(kind, "sysctl-name"):
		return strings.HasPrefix(r.Op, "sysctl")
	case strings.HasPrefix(kind, "iokit"):
		return strings.HasPrefix(r.Op, "iokit")
	case strings.HasPrefix(kind, "ipc-posix-name"):
		return strings.HasPrefix(r.Op, "ipc-posix")
	}
	return false
}

func (d sockDomain) Match(r *Request, _ *Options) bool { return r.SocketDomain == string(d) }
func (p sockProto) Match(r *Request, _ *Options) bool  { return r.SocketProtocol == int(p) }

// nameFilters maps a filter head to its kind and matching mode.
var nameFilters = map[string]string{
	"global-name": "exact", "global-name-prefix": "prefix", "global-name-regex": "regex",
	"local-name": "exact", "local-name-prefix": "prefix",
	"sysctl-name": "exact", "sysctl-name-prefix": "prefix", "sysctl-name-regex": "regex",
	"iokit-registry-entry-class": "exact", "iokit-user-client-class": "exact",
	"ipc-posix-name": "exact", "ipc-posix-name-prefix": "prefix", "ipc-posix-name-regex": "regex",
}

// filter compiles one filter form.
func (c *compiler) filter(l *List) (Filter, error) {
	head := symName(l.Items[0])
	args := l.Items[1:]
	switch head {
	case "literal", "path", "subpath", "prefix", "regex":
		v, err := c.oneString(l, head, args)
		if err != nil {
			return nil, err
		}
		return c.pathFilter(l, head, v)
	case "require-all", "require-any", "require-not":
		return c.logicFilter(l, head, args)
	case "vnode-type", "target", "socket-domain", "socket-protocol":
		return c.symbolFilter(l, head, args)
	case "extension":
		v, err := c.oneString(l, head, args)
		return ext(v), err
	case "local", "remote":
		return c.netFilter(l, head == "local", args)
	}
	if mode, ok := nameFilters[head]; ok {
		v, err := c.oneString(l, head, args)
		if err != nil {
			return nil, err
		}
		n := &name{kind: head, mode: mode, val: v}
		if mode == "regex" {
			if n.re, err = regexp.Compile(v); err != nil {
				return nil, c.errorf(l, "bad regex %q: %v", v, err)
			}
		}
		return n, nil
	}
	return nil, c.errorf(l, "unknown filter %q", head)
}

// oneString is the one string argument of (head X).
func (c *compiler) oneString(l *List, head string, args []Node) (string, error) {
	if len(args) != 1 {
		return "", c.errorf(l, "(%s X) takes one argument", head)
	}
	return c.str(args[0])
}

// logicFilter compiles (require-all F...), (require-any F...) and
// (require-not F).
func (c *compiler) logicFilter(l *List, head string, args []Node) (Filter, error) {
	if head == "require-not" {
		if len(args) != 1 {
			return nil, c.errorf(l, "(require-not F) takes one filter")
		}
		al, ok := args[0].(*List)
		if !ok || len(al.Items) == 0 {
			return nil, c.errorf(l, "(require-not F) takes one filter")
		}
		f, err := c.filter(al)
		return notOf{f}, err
	}
	var fs []Filter
	for _, a := range args {
		al, ok := a.(*List)
		if !ok || len(al.Items) == 0 {
			return nil, c.errorf(l, "(%s ...) takes filters", head)
		}
		f, err := c.filter(al)
		if err != nil {
			return nil, err
		}
		fs = append(fs, f)
	}
	if len(fs) == 0 {
		return nil, c.errorf(l, "empty (%s)", head)
	}
	if head == "require-all" {
		return allOf(fs), nil
	}
	return anyOf(fs), nil
}

// symbolFilter compiles (vnode-type S), (target S), (socket-domain S) and
// (socket-protocol N).
func (c *compiler) symbolFilter(l *List, head string, args []Node) (Filter, error) {
	if head == "socket-protocol" {
		if len(args) != 1 {
			return nil, c.errorf(l, "(socket-protocol N) takes one number")
		}
		n, err := strconv.Atoi(symName(args[0]))
		if err != nil {
			return nil, c.errorf(l, "(socket-protocol N) takes one number")
		}
		return sockProto(n), nil
	}
	if len(args) != 1 || symName(args[0]) == "" {
		return nil, c.errorf(l, "(%s SYMBOL) takes one symbol", head)
	}
	v := symName(args[0])
	switch head {
	case "vnode-type":
		return vnode(v), nil
	case "target":
		return target(v), nil
	}
	return sockDomain(v), nil
}

func (c *compiler) pathFilter(l *List, kind, v string) (*pathMatch, error) {
	if kind == "path" || kind == "path-literal" {
		kind = "literal"
	}
	if kind == "path-regex" {
		kind = "regex"
	}
	p := &pathMatch{kind: kind, val: v}
	if kind == "regex" {
		re, err := regexp.Compile(v)
		if err != nil {
			return nil, c.errorf(l, "bad regex %q: %v", v, err)
		}
		p.re = re
		return p, nil
	}
	if !strings.HasPrefix(v, "/") {
		return nil, c.errorf(l, "(%s %q): a path filter needs an absolute path", kind, v)
	}
	return p, nil
}

// netFilter compiles (local|remote ip|tcp|udp "host:port") and
// (local|remote unix-socket [F]).
func (c *compiler) netFilter(l *List, local bool, args []Node) (Filter, error) {
	if len(args) == 0 {
		return nil, c.errorf(l, "a network filter needs a protocol")
	}
	switch proto := symName(args[0]); proto {
	case "ip", "tcp", "udp":
		if len(args) != 2 {
			return nil, c.errorf(l, "(%s %s \"host:port\")", symName(l.Items[0]), proto)
		}
		s, err := c.str(args[1])
		if err != nil {
			return nil, err
		}
		return c.addrFilter(l, local, proto, s)
	case "unix-socket":
		return c.unixFilter(l, local, args)
	default:
		return nil, c.errorf(l, "unknown network protocol %q", proto)
	}
}

// addrFilter compiles the address "host:port" of an ip, tcp or udp
// filter: host * or localhost, port * or a number.
func (c *compiler) addrFilter(l *List, local bool, proto, s string) (Filter, error) {
	host, port, ok := strings.Cut(s, ":")
	if !ok || strings.Count(s, ":") != 1 {
		return nil, c.errorf(l, "address %q: want host:port", s)
	}
	if host != "*" && host != "localhost" {
		return nil, c.errorf(l, "address %q: host must be * or localhost", s)
	}
	a := addr{local: local, proto: proto, any: host == "*"}
	if port != "*" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return nil, c.errorf(l, "address %q: port must be * or 1-65535", s)
		}
		a.port = n
	}
	return a, nil
}

// unixFilter compiles (unix-socket [F]), F one path filter.
func (c *compiler) unixFilter(l *List, local bool, args []Node) (Filter, error) {
	u := unixSock{local: local}
	if len(args) == 1 {
		return u, nil
	}
	inner, ok := args[1].(*List)
	if len(args) != 2 || !ok || len(inner.Items) != 2 {
		return nil, c.errorf(l, "(unix-socket F) takes one path filter")
	}
	kind := symName(inner.Items[0])
	switch kind {
	case "path-literal", "literal", "subpath", "path-regex", "regex", "prefix":
	default:
		return nil, c.errorf(inner, "unsupported unix-socket filter %q", kind)
	}
	v, err := c.str(inner.Items[1])
	if err != nil {
		return nil, err
	}
	if u.path, err = c.pathFilter(inner, kind, v); err != nil {
		return nil, err
	}
	return u, nil
}
