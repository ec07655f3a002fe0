//go:build linux || darwin

package probe

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// opProxyGet (NET-20 … NET-26) sends one absolute-form GET for args url to the proxy at args
// proxy, with args host as the Host header ("" : the URL's), and reads the
// status line and a bounded excerpt of the answer. It only says what the client saw: the selftest
// judges by the proxy's decisions and its canaries' records.
func opProxyGet(s Step, _ string) Observation {
	c, err := net.DialTimeout("tcp", s.Args["proxy"], 5*time.Second)
	if err != nil {
		return Observation{Errno: errnoName(err), Detail: "dialling the proxy " + s.Args["proxy"]}
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	host := s.Args["host"]
	if host == "" {
		host = strings.SplitN(strings.TrimPrefix(s.Args["url"], "http://"), "/", 2)[0]
	}
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", s.Args["url"], host); err != nil {
		return Observation{Errno: errnoName(err), Detail: "writing the request"}
	}
	r := bufio.NewReader(c)
	status, err := r.ReadString('\n')
	if err != nil && status == "" {
		return Observation{Errno: errnoName(err), Detail: "no answer from the proxy"}
	}
	f := strings.Fields(status)
	code := ""
	if len(f) >= 2 {
		code = f[1]
	}
	if s.Args["count"] != "" {
		// A download (NET-28): how much of the body arrived.
		n, err := io.Copy(io.Discard, io.LimitReader(r, 64<<20))
		return Observation{OK: code == "200", Detail: excerpt(fmt.Sprintf("%s; %d bytes after the status line (%v)", strings.TrimSpace(status), n, err)),
			Values: map[string]string{"status": code, "bytes": strconv.FormatInt(n, 10)}}
	}
	// To the end (bounded): the proxy has then finished with the request.
	rest, _ := io.ReadAll(io.LimitReader(r, 4<<10))
	return Observation{OK: code == "200", Detail: excerpt(strings.TrimSpace(status) + " " + string(rest)),
		Values: map[string]string{"status": code}}
}

// opUDPSend sends one datagram to each address in the list: ok when any
// send did not fail (whether it arrived is the canary's to say).
func opUDPSend(s Step, _ string) Observation {
	var o Observation
	var errs []string
	for _, a := range s.List {
		c, err := net.DialTimeout("udp", a, time.Second)
		if err == nil {
			_, err = c.Write([]byte("probe\n"))
			c.Close()
		}
		if err != nil {
			errs = append(errs, a+" "+errnoName(err))
			continue
		}
		o.OK = true
		o.Detail = "sent to " + a
	}
	if !o.OK {
		o.Errno = "ENETUNREACH"
		o.Detail = strings.Join(errs, "; ")
		if len(errs) > 0 {
			o.Errno = strings.Fields(errs[0])[1]
		}
	}
	return o
}

// opProxyConnect (NET-26) opens a CONNECT tunnel to args target through
// the proxy at args proxy and, once it answers 200, sends a CONNECT for
// args inner inside it, as a client relaying a second proxy would.
func opProxyConnect(s Step, _ string) Observation {
	c, err := net.DialTimeout("tcp", s.Args["proxy"], 5*time.Second)
	if err != nil {
		return Observation{Errno: errnoName(err), Detail: "dialling the proxy " + s.Args["proxy"]}
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	head := func(target string) (string, error) {
		if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target); err != nil {
			return "", err
		}
		status, err := r.ReadString('\n')
		for err == nil {
			line, lerr := r.ReadString('\n')
			if lerr != nil || strings.TrimSpace(line) == "" {
				break
			}
		}
		if f := strings.Fields(status); len(f) >= 2 {
			return f[1], nil
		}
		return "", err
	}
	code, err := head(s.Args["target"])
	o := Observation{Values: map[string]string{"status": code}}
	if code == "" {
		o.Errno, o.Detail = errnoName(err), "no answer from the proxy"
		return o
	}
	if code != "200" {
		o.Detail = "CONNECT " + s.Args["target"] + ": " + code
		return o
	}
	inner, err := head(s.Args["inner"])
	o.Values["inner"] = inner
	o.OK = inner == "200"
	o.Detail = excerpt(fmt.Sprintf("CONNECT %s: 200; inside it CONNECT %s: %q (%v)", s.Args["target"], s.Args["inner"], inner, err))
	return o
}
