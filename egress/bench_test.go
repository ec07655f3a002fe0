package egress

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// BenchmarkTunnel50MB downloads 50 MB from a loopback TLS canary through
// a CONNECT tunnel and directly, alternately, and reports the ratio of
// their times (proxy/direct) for the 1.1× target.
func BenchmarkTunnel50MB(b *testing.B) {
	const size = 50 << 20
	w := newWorld(b, Limits{MaxBytes: 1 << 40})
	proxied := w.client()
	direct := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	viaProxy := fmt.Sprintf("https://tls.test:%d/?bytes=%d", w.tlsPort, size)
	straight := fmt.Sprintf("https://%s:%d/?bytes=%d", upstreamAddr, w.tlsPort, size)
	var tProxy, tDirect time.Duration
	for b.Loop() {
		tDirect += fetch(b, direct, straight, size)
		tProxy += fetch(b, proxied, viaProxy, size)
	}
	b.ReportMetric(float64(tProxy)/float64(tDirect), "proxy/direct")
	b.ReportMetric(float64(tProxy.Milliseconds())/float64(b.N), "ms-proxied/op")
	b.ReportMetric(float64(tDirect.Milliseconds())/float64(b.N), "ms-direct/op")
}

func fetch(b *testing.B, c *http.Client, u string, size int64) time.Duration {
	start := time.Now()
	resp, err := c.Get(u)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || n != size {
		b.Fatalf("%s: %d bytes, %v", u, n, err)
	}
	return time.Since(start)
}
