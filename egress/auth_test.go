package egress

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

const testSecret = "0123456789abcdef0123456789abcdef"

// TestSecretAllowsTheRunsClient: a client configured from the proxy URL
// (credentials in it) gets through, tunnel and plain request alike, and
// the credentials never reach the upstream.
func TestSecretAllowsTheRunsClient(t *testing.T) {
	w := newWorldOn(t, Limits{}, testSecret)
	c := w.client()
	for _, u := range []string{
		fmt.Sprintf("https://tls.test:%d/", w.tlsPort),
		fmt.Sprintf("http://plain.test:%d/", w.plainPort),
	} {
		code, body, err := get(t, c, u)
		// The canary echoes the Proxy-Authorization it received: none.
		want := "canary " + strings.TrimPrefix(strings.TrimPrefix(u, "https://"), "http://")
		want = strings.TrimSuffix(want, "/") + " "
		if err != nil || code != 200 || body != want {
			t.Errorf("GET %s with the run's credentials: %d %q %v; want 200 %q", u, code, body, err, want)
		}
	}
	for _, d := range w.decisions() {
		if !d.Allowed {
			t.Errorf("decision %+v: want allowed", d)
		}
	}
}

func basic(userPass string) string {
	return "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(userPass)) + "\r\n"
}

// TestSecretRefusesOthers: every request without the run's credentials is
// answered 407 before its target is judged: nothing looked up, nothing
// dialled, no host recorded.
func TestSecretRefusesOthers(t *testing.T) {
	cases := []struct {
		name, auth, reason string
	}{
		{"none", "", "no proxy credentials"},
		{"wrong password", basic(ProxyUser + ":" + strings.Repeat("0", len(testSecret))), "wrong proxy credentials"},
		{"wrong user", basic("root:" + testSecret), "wrong proxy credentials"},
		{"secret as user", basic(testSecret + ":"), "wrong proxy credentials"},
		{"prefix of the secret", basic(ProxyUser + ":" + testSecret[:10]), "wrong proxy credentials"},
		{"secret with a suffix", basic(ProxyUser + ":" + testSecret + "x"), "wrong proxy credentials"},
		{"other scheme", "Proxy-Authorization: Bearer " + testSecret + "\r\n", "Basic scheme"},
		{"not base64", "Proxy-Authorization: Basic ts:" + testSecret + "\r\n", "base64"},
		{"two headers", basic("root:x") + basic(ProxyUser+":"+testSecret), "more than one"},
	}
	for _, tc := range cases {
		for _, req := range []string{
			"CONNECT tls.test:%d HTTP/1.1\r\nHost: tls.test:%[1]d\r\n%s\r\n",
			"GET http://plain.test:%d/ HTTP/1.1\r\nHost: plain.test:%[1]d\r\n%s\r\n",
		} {
			t.Run(tc.name+"/"+strings.Fields(req)[0], func(t *testing.T) {
				w := newWorldOn(t, Limits{}, testSecret)
				port := w.tlsPort
				if strings.HasPrefix(req, "GET") {
					port = w.plainPort
				}
				c := w.dialProxy()
				fmt.Fprintf(c, req, port, tc.auth)
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusProxyAuthRequired || !strings.Contains(string(body), tc.reason) ||
					resp.Header.Get("Proxy-Authenticate") == "" {
					t.Errorf("answer %d %q, want 407 saying %q with Proxy-Authenticate", resp.StatusCode, body, tc.reason)
				}
				if strings.Contains(string(body), testSecret) {
					t.Errorf("the answer shows the secret: %q", body)
				}
				ds := w.decisions()
				if len(ds) != 1 || ds[0].Allowed || ds[0].Host != "" || !strings.Contains(ds[0].Reason, tc.reason) {
					t.Errorf("decisions %+v, want one refusal with no host saying %q", ds, tc.reason)
				}
				if n, m := w.lookups.Load(), w.dials.Load(); n != 0 || m != 0 {
					t.Errorf("%d lookups and %d dials for a request without the credentials", n, m)
				}
			})
		}
	}
}

// TestSecretJudgedPerRequest: a second plain request on a kept-alive
// connection is checked again; the first one's credentials do not carry.
func TestSecretJudgedPerRequest(t *testing.T) {
	w := newWorldOn(t, Limits{}, testSecret)
	c := w.dialProxy()
	br := bufio.NewReader(c)
	fmt.Fprintf(c, "GET http://plain.test:%d/ HTTP/1.1\r\nHost: plain.test:%[1]d\r\n%s\r\n", w.plainPort, basic(ProxyUser+":"+testSecret))
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("first request: %v %v", resp, err)
	}
	io.Copy(io.Discard, resp.Body)
	fmt.Fprintf(c, "GET http://plain.test:%d/ HTTP/1.1\r\nHost: plain.test:%[1]d\r\n\r\n", w.plainPort)
	resp, err = http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusProxyAuthRequired {
		t.Fatalf("second request without credentials on the same connection: %v %v; want 407", resp, err)
	}
}

func TestNewSecretAndProxyURL(t *testing.T) {
	a, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewSecret()
	if len(a) != 64 || a == b || strings.Trim(a, "0123456789abcdef") != "" {
		t.Errorf("secrets %q, %q: want two different 64-digit hex strings", a, b)
	}
	got := ProxyURL("127.0.0.1:41000", a)
	u, err := url.Parse(got)
	if err != nil {
		t.Fatal(err)
	}
	if pw, _ := u.User.Password(); u.Scheme != "http" || u.Host != "127.0.0.1:41000" || u.User.Username() != ProxyUser || pw != a {
		t.Errorf("ProxyURL = %q", got)
	}
	if got := ProxyURL("127.0.0.1:3128", ""); got != "http://127.0.0.1:3128" {
		t.Errorf("ProxyURL without a secret = %q", got)
	}
}

// TestSecretRefusalsBounded: requests without credentials, which any local
// process can send, fill at most maxAuthDecisions of the record; the rest
// are counted, and the run's own decisions still fit.
func TestSecretRefusalsBounded(t *testing.T) {
	w := newWorldOn(t, Limits{}, testSecret)
	for i := 0; i < maxAuthDecisions+5; i++ {
		c := w.dialProxy()
		fmt.Fprintf(c, "GET http://plain.test:%d/ HTTP/1.1\r\nHost: plain.test:%[1]d\r\n\r\n", w.plainPort)
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != http.StatusProxyAuthRequired {
			t.Fatalf("request %d without credentials: %v %v", i, resp, err)
		}
		c.Close()
	}
	if code, _, err := get(t, w.client(), fmt.Sprintf("http://plain.test:%d/", w.plainPort)); err != nil || code != 200 {
		t.Fatalf("the run's own request: %d %v", code, err)
	}
	ds := w.decisions()
	if len(ds) != maxAuthDecisions+1 || !ds[len(ds)-1].Allowed || w.proxy.Dropped() != 5 {
		t.Errorf("%d decisions (last %+v), %d dropped; want %d refusals kept, the run's request, 5 dropped",
			len(ds), ds[len(ds)-1], w.proxy.Dropped(), maxAuthDecisions)
	}
}
