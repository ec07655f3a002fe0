//go:build linux

package integration_test

import (
	"strings"
	"testing"
)

// resolveLocalhost resolves the name localhost through the C library
// (getaddrinfo, as Node, Python and curl do), serves on it and connects to
// it by name; it prints the addresses the name gave and what came back.
const resolveLocalhost = `
import socket
addrs = sorted({a[4][0] for a in socket.getaddrinfo("localhost", 0, proto=socket.IPPROTO_TCP)})
srv = socket.create_server(("localhost", 0))
port = srv.getsockname()[1]
cli = socket.create_connection(("localhost", port), timeout=5)
conn, _ = srv.accept()
cli.sendall(b"ping")
print(" ".join(addrs), conn.recv(4).decode())
`

// TestLocalhostResolves is issue 34's #5: the name localhost resolves to
// the loopback in every sandbox, with no DNS (the oci backend's root had
// an empty /etc/hosts: getaddrinfo EAI_AGAIN localhost, and vitest and
// anything serving on http://localhost failed).
func TestLocalhostResolves(t *testing.T) {
	forEachBackend(t, func(t *testing.T, k *kit) {
		f := newFixture(t)
		p := k.build(t, f, "reproducer", currentHost(t))
		out := k.run(t, p, 0, "python3", "-c", resolveLocalhost)
		fields := strings.Fields(out.stdout)
		if out.res.ExitCode != 0 || len(fields) < 2 || fields[len(fields)-1] != "ping" {
			t.Fatalf("exit %d out %q err %q", out.res.ExitCode, out.stdout, out.stderr)
		}
		for _, a := range fields[:len(fields)-1] {
			if !strings.HasPrefix(a, "127.") && a != "::1" {
				t.Errorf("localhost resolved to %s, which is not the loopback (%q)", a, out.stdout)
			}
		}
	})
}
