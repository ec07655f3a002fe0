package egress

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ProxyUser is the user name of the proxy's credentials (Config.Secret is
// the password): clients take both from the proxy URL,
// http://ts:SECRET@127.0.0.1:PORT, and send them as Proxy-Authorization.
const ProxyUser = "ts"

// NewSecret returns a fresh per-run secret for Config.Secret: 256 random
// bits in hex, which needs no escaping in a URL.
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("egress proxy secret: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// ProxyURL is the URL that names a proxy at addr (host:port) for the
// command's HTTP_PROXY and the like, with secret's credentials when it is
// not "".
func ProxyURL(addr, secret string) string {
	u := url.URL{Scheme: "http", Host: addr}
	if secret != "" {
		u.User = url.UserPassword(ProxyUser, secret)
	}
	return u.String()
}

// unauthorized says why req does not carry the proxy's credentials, or ""
// when it does or none are required. It runs before anything of the
// request is judged, so a client without them learns nothing about the
// allow-list. The comparison takes the same time for every wrong value:
// both sides are hashed first, so not even the length is compared.
func (p *Proxy) unauthorized(req *http.Request) string {
	if p.cfg.Secret == "" {
		return ""
	}
	vals := req.Header.Values("Proxy-Authorization")
	switch {
	case len(vals) == 0:
		return "no proxy credentials (Proxy-Authorization): use the proxy URL in HTTP_PROXY as given, with its user and password"
	case len(vals) > 1:
		return "more than one Proxy-Authorization header"
	}
	scheme, enc, _ := strings.Cut(strings.TrimSpace(vals[0]), " ")
	if !strings.EqualFold(scheme, "Basic") {
		return "proxy credentials not in the Basic scheme"
	}
	got, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return "proxy credentials not in base64"
	}
	g, w := sha256.Sum256(got), sha256.Sum256([]byte(ProxyUser+":"+p.cfg.Secret))
	if subtle.ConstantTimeCompare(g[:], w[:]) != 1 {
		return "wrong proxy credentials"
	}
	return ""
}

// maxAuthDecisions bounds the refusals without credentials that are
// recorded (the rest are counted in Dropped): they may come from any local
// process, which must not crowd the sandbox's own decisions out of the
// record.
const maxAuthDecisions = 10

// refuseAuth records a request without the proxy's credentials, with no
// host (it may not be the sandbox's), and answers 407 so that a client that
// has them but waits to be asked sends them.
func (p *Proxy) refuseAuth(c net.Conn, d Decision, why string) {
	d.Allowed, d.Reason = false, why
	if p.authRefused.Add(1) <= maxAuthDecisions {
		p.record(d)
	} else {
		p.mu.Lock()
		p.dropped++
		p.mu.Unlock()
	}
	body := "triage-sandbox egress proxy refused the request: " + why + "\n"
	_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"triage-sandbox\"\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		len(body), body)
}
