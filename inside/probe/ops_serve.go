package probe

import (
	"net"
	"strconv"
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
