// Command netprobe is the darwin integration tests' probe: it performs one
// action and prints "ok" or "err: why", exiting 0 or 1. It never sends a
// packet off the machine: "udp" only connects a UDP socket, which is a
// route lookup.
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Println("err: usage: netprobe read|write|udp|tcp|unix|serve|listen|proxyget ARG")
		os.Exit(2)
	}
	arg := os.Args[2]
	var out string
	var err error
	switch os.Args[1] {
	case "read":
		var b []byte
		b, err = os.ReadFile(arg)
		out = string(b)
	case "write":
		err = os.WriteFile(arg, []byte("netprobe\n"), 0o644)
	case "udp":
		var c net.Conn
		if c, err = net.Dial("udp", arg); err == nil {
			c.Close()
		}
	case "tcp":
		var c net.Conn
		if c, err = net.DialTimeout("tcp", arg, 3*time.Second); err == nil {
			c.Close()
		}
	case "unix":
		var c net.Conn
		if c, err = net.Dial("unix", arg); err == nil {
			c.Close()
		}
	case "serve":
		err = serve(arg)
	case "proxyget":
		// GET arg through the proxy the environment names (HTTP_PROXY),
		// as a command's tools do; prints the status and the body.
		var resp *http.Response
		c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: http.ProxyFromEnvironment}}
		if resp, err = c.Get(arg); err == nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
			resp.Body.Close()
			out = resp.Status + " " + string(b)
		}
	case "listen":
		var ln net.Listener
		if ln, err = net.Listen("tcp", arg); err == nil {
			ln.Close()
		}
	default:
		err = fmt.Errorf("unknown action %q", os.Args[1])
	}
	if err != nil {
		fmt.Println("err:", err)
		os.Exit(1)
	}
	fmt.Println("ok", out)
}

// serve listens on addr (127.0.0.1:0) and connects to itself: a
// reproducer's own server and its client.
func serve(addr string) error {
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Write([]byte("hi"))
			c.Close()
		}
	}()
	c, err := net.DialTimeout("tcp4", ln.Addr().String(), 3*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	b := make([]byte, 2)
	_, err = c.Read(b)
	return err
}
