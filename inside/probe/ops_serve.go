package probe

import (
	"net"
	"strconv"
	"strings"
	"time"
)

// opTCPServe listens on Args["addr"] and writes Args["token"] to every
// connection for Args["seconds"] seconds (at most an hour), then reports
// how many it accepted. It is a pod's listener and sleeper in the
// kubernetes backend's start-time network check: the sandbox image's own
// binary, so the check needs no tool of the image's.
func opTCPServe(s Step, _ string) Observation {
	secs, err := strconv.Atoi(s.Args["seconds"])
	if err != nil || secs <= 0 || secs > 3600 {
		return Observation{Errno: "EINVAL", Detail: "seconds: want 1..3600, have " + s.Args["seconds"]}
	}
	ln, err := net.Listen("tcp", s.Args["addr"])
	if err != nil {
		return Observation{Errno: errnoName(err), Detail: "listen on " + s.Args["addr"]}
	}
	defer ln.Close()
	end := time.Now().Add(time.Duration(secs) * time.Second)
	if tl, ok := ln.(*net.TCPListener); ok {
		_ = tl.SetDeadline(end)
	}
	if s.Args["udp"] == "true" {
		// The same token to every datagram on the same address: the
		// selftest's stand-in for a DNS server where the cluster has none.
		pc, err := net.ListenPacket("udp", s.Args["addr"])
		if err != nil {
			return Observation{Errno: errnoName(err), Detail: "listen on udp " + s.Args["addr"]}
		}
		defer pc.Close()
		_ = pc.SetDeadline(end)
		go answerDatagrams(pc, s.Args["token"])
	}
	n := 0
	for {
		c, err := ln.Accept()
		if err != nil {
			break
		}
		n++
		_ = c.SetDeadline(time.Now().Add(time.Second))
		_, _ = c.Write([]byte(s.Args["token"] + "\n"))
		_ = c.Close()
	}
	return Observation{OK: true, Detail: "accepted " + strconv.Itoa(n), Values: map[string]string{"accepted": strconv.Itoa(n)}}
}

// opTCPToken connects to the one address in List, writes Args["send"]
// (if any) and reads what the target answers (at most 256 bytes, for
// two seconds). OK means something was read; Values["read"] is it. The
// selftest's cluster checks and their controls decide "reached" by the
// target's own answer, never by how a connect failed: on a pod network
// a policy controller's reject is a refusal, and a refusal is no answer.
func opTCPToken(s Step, _ string) Observation {
	if len(s.List) != 1 {
		return Observation{Errno: "EINVAL", Detail: "tcp_token: want one address"}
	}
	addr := s.List[0]
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		name := errnoName(err)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			name = "ETIMEDOUT"
		}
		return Observation{Errno: name, Detail: "connect to " + addr}
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if msg := s.Args["send"]; msg != "" {
		_, _ = c.Write([]byte(msg))
	}
	buf := make([]byte, 256)
	n := 0
	for n < len(buf) {
		k, err := c.Read(buf[n:])
		n += k
		if err != nil {
			break
		}
	}
	if n == 0 {
		return Observation{Errno: "ENODATA", Detail: "connected to " + addr + ", nothing read"}
	}
	return Observation{OK: true, Detail: "read from " + addr, Values: map[string]string{"read": string(buf[:n])}}
}

func answerDatagrams(pc net.PacketConn, token string) {
	buf := make([]byte, 512)
	for {
		_, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		_, _ = pc.WriteTo([]byte(token+"\n"), from)
	}
}

// opUDPToken sends one datagram to the one address in List and reads one
// answer for two seconds: Args["dns"] names a host to ask for (type A) as
// a DNS query, and an answer is "dns answer rcode N" when it is a DNS
// response to that query; else Args["send"] is sent and the answer read
// as it is. OK means an answer came; Values["read"] is it.
func opUDPToken(s Step, _ string) Observation {
	if len(s.List) != 1 {
		return Observation{Errno: "EINVAL", Detail: "udp_token: want one address"}
	}
	addr := s.List[0]
	c, err := net.Dial("udp", addr)
	if err != nil {
		return Observation{Errno: errnoName(err), Detail: "udp to " + addr}
	}
	defer c.Close()
	msg := []byte(s.Args["send"])
	var id uint16
	if name := s.Args["dns"]; name != "" {
		id = uint16(time.Now().UnixNano())
		msg = dnsQuery(id, name)
	}
	if len(msg) == 0 {
		msg = []byte("probe\n")
	}
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write(msg); err != nil {
		return Observation{Errno: errnoName(err), Detail: "udp to " + addr}
	}
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	if err != nil {
		name := errnoName(err)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			name = "ETIMEDOUT"
		}
		return Observation{Errno: name, Detail: "no answer from " + addr}
	}
	read := string(buf[:n])
	if s.Args["dns"] != "" {
		// A response (QR set) to our query's id; anything else is not
		// the DNS server's answer.
		if n < 12 || uint16(buf[0])<<8|uint16(buf[1]) != id || buf[2]&0x80 == 0 {
			return Observation{Errno: "EBADMSG", Detail: "not a DNS answer from " + addr}
		}
		read = "dns answer rcode " + strconv.Itoa(int(buf[3]&0x0f))
	}
	return Observation{OK: true, Detail: "read from " + addr, Values: map[string]string{"read": read}}
}

// dnsQuery is a DNS query for name, type A, class IN, recursion desired.
func dnsQuery(id uint16, name string) []byte {
	q := []byte{byte(id >> 8), byte(id), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0}
	for _, label := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		if label == "" || len(label) > 63 {
			continue
		}
		q = append(q, byte(len(label)))
		q = append(q, label...)
	}
	return append(q, 0, 0, 1, 0, 1)
}
