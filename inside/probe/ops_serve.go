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
