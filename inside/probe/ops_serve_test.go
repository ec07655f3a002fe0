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

// TestUDPToken: udp_token reads the token tcp_serve's UDP side answers;
// asked as DNS, only a response to its own query counts.
func TestUDPToken(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go answerDatagrams(pc, "tok-u")
	o := opUDPToken(Step{List: []string{pc.LocalAddr().String()}}, "")
	if !o.OK || o.Values["read"] != "tok-u\n" {
		t.Errorf("udp_token to the token listener: %+v", o)
	}
	// The token listener is no DNS server.
	o = opUDPToken(Step{Args: map[string]string{"dns": "kubernetes.default"}, List: []string{pc.LocalAddr().String()}}, "")
	if o.OK || o.Errno != "EBADMSG" {
		t.Errorf("udp_token asking DNS of the token listener: %+v", o)
	}
	pc.Close()

	// A DNS server of a few lines: the query back, as a response.
	dns, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer dns.Close()
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := dns.ReadFrom(buf)
			if err != nil {
				return
			}
			buf[2] |= 0x80
			buf[3] = 3 // NXDOMAIN
			_, _ = dns.WriteTo(buf[:n], from)
		}
	}()
	o = opUDPToken(Step{Args: map[string]string{"dns": "kubernetes.default.svc.cluster.local"}, List: []string{dns.LocalAddr().String()}}, "")
	if !o.OK || o.Values["read"] != "dns answer rcode 3" {
		t.Errorf("udp_token asking DNS: %+v", o)
	}
}
