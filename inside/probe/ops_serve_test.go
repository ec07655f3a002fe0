//go:build linux || darwin

package probe

import (
	"bufio"
	"net"
	"testing"
)

// TestTCPToken: tcp_token reads the target's own answer (after what it
// sends), and a refused connect is no answer: not OK, its errno said.
func TestTCPToken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			line, _ := bufio.NewReader(c).ReadString('\n')
			_, _ = c.Write([]byte("answer to " + line))
			c.Close()
		}
	}()
	o := opTCPToken(Step{Args: map[string]string{"send": "ping\n"}, List: []string{l.Addr().String()}}, "")
	if !o.OK || o.Values["read"] != "answer to ping\n" {
		t.Errorf("tcp_token to a listener: %+v", o)
	}
	addr := l.Addr().String()
	l.Close()
	o = opTCPToken(Step{List: []string{addr}}, "")
	if o.OK || o.Errno != "ECONNREFUSED" || o.Values["read"] != "" {
		t.Errorf("tcp_token to a closed port: %+v", o)
	}
}
