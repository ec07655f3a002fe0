//go:build linux || darwin

package probe

import (
	"net"
	"strings"
	"testing"
	"time"
)

// TestLoopbackPage: the http_self op serves its page on loopback and
// fetches it, by address and by name, with HTTP written by hand (no
// net/http in the inside binary); the fetch reads exactly the body served
// and refuses what is not an HTTP response.
func TestLoopbackPage(t *testing.T) {
	for _, args := range []map[string]string{
		{"addr": "127.0.0.1:0"},
		{"addr": "localhost:0", "host": "localhost"},
	} {
		if o := opHTTPSelf(Step{Args: args}, ""); !o.OK {
			t.Errorf("http_self %v: %+v", args, o)
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	body := strings.Repeat("page\n", 2000) // past one read of the head's buffer
	go servePage(ln, "text/plain", body, 2*time.Second)
	code, got, err := fetchPage(ln.Addr().String(), 3*time.Second)
	if err != nil || code != 200 || string(got) != body {
		t.Errorf("fetchPage: %d, %d bytes, %v; want 200 and the %d bytes served", code, len(got), err, len(body))
	}

	junk, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer junk.Close()
	go func() {
		c, err := junk.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.6 200\r\n\r\n"))
	}()
	if code, _, err := fetchPage(junk.Addr().String(), 3*time.Second); err == nil || !strings.Contains(err.Error(), "not an HTTP response") {
		t.Errorf("fetchPage of a non-HTTP answer: %d, %v; want not an HTTP response", code, err)
	}
}

// TestBrowserPage: headless Chromium renders the page the browser op
// serves (its script runs), when this host has a Chromium.
func TestBrowserPage(t *testing.T) {
	if findBrowser() == "" {
		t.Skip("no Chromium on this host: the browser op is tested by the selftest's C-06 where the image has one")
	}
	if o := opBrowser(Step{}, ""); !o.OK {
		t.Errorf("browser: %+v", o)
	}
}
