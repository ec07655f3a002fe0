// Command netprobe is what the test cluster's network tests run in their
// pods (kubecluster.ProbeImage puts it in an image of its own):
//
//	netprobe sleep                 wait forever (the pod's process)
//	netprobe serve PORT TOKEN      accept on PORT, write TOKEN and a newline
//	                               to each connection, print its peer
//	netprobe connect ADDR TIMEOUT  one TCP connect to ADDR; print one line
//	                               (kubecluster.Verdict says what each means)
//	netprobe routes                print the IPv4 routes, one a line
//	                               (DEST/BITS via GW dev IF)
//
// A target always listens and answers with its token, so a connect that
// reads the token reached it, and one refused or timed out did not: the
// target never sends a reset (it listens), so a refusal there is the
// firewall's reject, and a timeout its drop.
package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: netprobe sleep | serve PORT TOKEN | connect ADDR TIMEOUT | routes")
	}
	switch args := os.Args[2:]; os.Args[1] {
	case "sleep":
		for { // not select{}: the runtime would call that a deadlock
			time.Sleep(time.Hour)
		}
	case "serve":
		if len(args) != 2 {
			fail("usage: netprobe serve PORT TOKEN")
		}
		serve(args[0], args[1])
	case "connect":
		if len(args) != 2 {
			fail("usage: netprobe connect ADDR TIMEOUT")
		}
		d, err := time.ParseDuration(args[1])
		if err != nil {
			fail(err.Error())
		}
		fmt.Println(connect(args[0], d))
	case "routes":
		if err := routes(); err != nil {
			fail(err.Error())
		}
	default:
		fail("netprobe: unknown mode " + os.Args[1])
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, msg)
	os.Exit(2)
}

func serve(port, token string) {
	l, err := net.Listen("tcp", ":"+port)
	if err != nil {
		fail(err.Error())
	}
	for {
		c, err := l.Accept()
		if err != nil {
			fail(err.Error())
		}
		fmt.Println("accepted from", c.RemoteAddr())
		_, _ = c.Write([]byte(token + "\n"))
		_ = c.Close()
	}
}

// connect's words: "reached TOKEN" (connected, read the target's token),
// "connected" (connected, no token), "refused", "timeout", "unreachable"
// (no route, or the network said so), "error: ...".
func connect(addr string, d time.Duration) string {
	c, err := net.DialTimeout("tcp", addr, d)
	switch {
	case err == nil:
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(d))
		line, _ := bufio.NewReader(c).ReadString('\n')
		if line = strings.TrimSpace(line); line != "" {
			return "reached " + line
		}
		return "connected"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "unreachable"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return "error: " + err.Error()
}

// routes prints /proc/net/route (the pod's own namespace's) decoded.
func routes() error {
	f, err := os.Open("/proc/net/route")
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 {
			continue
		}
		dst, gw, mask := hexIP(f[1]), hexIP(f[2]), hexIP(f[7])
		bits, _ := net.IPMask(mask.To4()).Size()
		fmt.Printf("%s/%d via %s dev %s\n", dst, bits, gw, f[0])
	}
	return sc.Err()
}

// hexIP reads /proc/net/route's little-endian hex address.
func hexIP(h string) net.IP {
	v, err := strconv.ParseUint(h, 16, 32)
	if err != nil {
		return net.IPv4zero
	}
	ip := make(net.IP, 4)
	binary.LittleEndian.PutUint32(ip, uint32(v))
	return ip
}
