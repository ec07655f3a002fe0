package egress

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzClientHello: any bytes from the sandbox give a name or an error,
// never a panic, and a name only from a well-formed hello.
func FuzzClientHello(f *testing.F) {
	f.Add(clientHello(f, &tls.Config{ServerName: "a.test", InsecureSkipVerify: true}))
	f.Add([]byte{0x16, 3, 1, 0, 4, 1, 0, 0, 0})
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		raw, name, err := readClientHello(bufio.NewReader(bytes.NewReader(in)))
		if err != nil {
			if strings.Contains(err.Error(), "\n") || !utf8.ValidString(err.Error()) {
				t.Fatalf("error not one line: %q", err)
			}
			return
		}
		if name == "" || len(raw) > maxHello || !bytes.HasPrefix(in, raw) {
			t.Fatalf("name %q raw %d bytes from %d", name, len(raw), len(in))
		}
		for _, c := range []byte(name) {
			if c <= ' ' || c >= 0x7f {
				t.Fatalf("name %q has byte %#x", name, c)
			}
		}
	})
}

// FuzzHead: the strict scan never finds fewer Host headers than net/http
// acts on, and never panics.
func FuzzHead(f *testing.F) {
	f.Add([]byte("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n"))
	f.Add([]byte("CONNECT a.test:443 HTTP/1.1\r\nHost: b\r\n\r\n"))
	f.Add([]byte("GET http://a.test/ HTTP/1.1\nHost: a\n\r\nHost: b\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		br := bufio.NewReaderSize(bytes.NewReader(in), bufSize)
		raw, err := peekHead(br)
		if err != nil {
			return
		}
		h, err := scanHead(raw)
		if err != nil {
			return
		}
		for _, l := range strings.Split(string(raw), "\n")[1:] {
			name, _, _ := strings.Cut(l, ":")
			if strings.EqualFold(name, "host") && len(h.hosts) == 0 {
				t.Fatalf("a Host line the scan missed in %q", raw)
			}
		}
	})
}

// FuzzSubstitute: whatever headers the sandbox sends, the real value goes
// out only with a bound method and only where the placeholder was, and a
// refused request says why in one line.
func FuzzSubstitute(f *testing.F) {
	const value = "ghp_fuzzVALUE0123456789abcdefghijklmnopq"
	ph := PlaceholderPrefix + "AAAAAAAAAAAAAAAAAAAAAAAAAA"
	f.Add("GET", "Authorization", "Bearer "+ph)
	f.Add("POST", "Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("x:"+ph)))
	f.Add("HEAD", "X-Token", ph+ph)
	f.Fuzz(func(t *testing.T, method, name, v string) {
		b := &Broker{Name: "GH_TOKEN", Value: value, Placeholder: ph, Methods: []string{"GET", "HEAD"}}
		hd := http.Header{name: {v}}
		used, why := substitute(b, method, hd)
		out := strings.Join(hd[name], "\n")
		had := strings.Contains(v, value)
		switch {
		case why != "":
			if used || strings.Contains(why, "\n") || strings.Contains(why, value) {
				t.Fatalf("refusal %q used %v", why, used)
			}
		case !used:
			if out != v {
				t.Fatalf("unused, yet %q became %q", v, out)
			}
		default:
			if method != "GET" && method != "HEAD" {
				t.Fatalf("the value put in for %q", method)
			}
			if strings.Contains(out, ph) && !strings.EqualFold(http.CanonicalHeaderKey(name), "Authorization") {
				t.Fatalf("placeholder left in %q", out)
			}
		}
		if !had && strings.Contains(out, value) && (why != "" || !used) {
			t.Fatalf("the value is in %q though nothing was put in", out)
		}
	})
}

// FuzzBrokerRequest: whatever request the sandbox sends in a brokered
// tunnel, what goes upstream names the tunnel's host alone and holds the
// value only with a bound method, and only when it sent the placeholder.
func FuzzBrokerRequest(f *testing.F) {
	const value = "ghp_fuzzVALUE0123456789abcdefghijklmnopq"
	ph := PlaceholderPrefix + "AAAAAAAAAAAAAAAAAAAAAAAAAA"
	f.Add([]byte("GET /x HTTP/1.1\r\nHost: api.test\r\nAuthorization: Bearer " + ph + "\r\n\r\n"))
	f.Add([]byte("POST /x HTTP/1.1\r\nHost: api.test\r\nX: " + ph + "\r\nContent-Length: 3\r\n\r\nabc"))
	f.Add([]byte("GET http://evil.test/ HTTP/1.1\r\nHost: api.test\r\n\r\n"))
	f.Add([]byte("GET / HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX: " + ph + "\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		b := &Broker{Name: "GH_TOKEN", Value: value, Placeholder: ph, Hosts: []string{"api.test"}, Methods: []string{"GET", "HEAD"}}
		tg := target{host: "api.test", port: 443}
		br := bufio.NewReader(bytes.NewReader(in))
		raw, err := peekHead(br)
		if err != nil {
			return
		}
		h, err := scanHead(raw)
		if err != nil {
			return
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if innerRequestRefused(req, h, tg) != "" {
			return
		}
		used, why := substitute(b, req.Method, req.Header)
		if why != "" {
			return
		}
		prepareInner(req, tg, used)
		var out bytes.Buffer
		if err := req.Write(&out); err != nil {
			return
		}
		sent := out.String()
		head, _, _ := strings.Cut(sent, "\r\n\r\n")
		if strings.Count(strings.ToLower(head), "\r\nhost:") != 1 || !strings.Contains(head, "\r\nHost: api.test\r\n") {
			t.Fatalf("the request upstream names another host:\n%q", head)
		}
		if strings.Contains(sent, value) && !bytes.Contains(in, []byte(value)) {
			if !used || (req.Method != "GET" && req.Method != "HEAD") {
				t.Fatalf("the value went with %s (used %v):\n%q", req.Method, used, sent)
			}
		}
	})
}
