package seatbelt

import (
	"reflect"
	"testing"
)

func TestParseNetstat(t *testing.T) {
	out := `Active Internet connections (including servers)
Proto Recv-Q Send-Q  Local Address          Foreign Address        (state)
tcp4       0      0  127.0.0.1.5432         *.*                    LISTEN
tcp6       0      0  ::1.5432               *.*                    LISTEN
tcp46      0      0  *.8080                 *.*                    LISTEN
tcp4       0      0  192.168.1.5.52341      140.82.113.4.443       ESTABLISHED
tcp4       0      0  127.0.0.1.6379         127.0.0.1.50000        ESTABLISHED
udp4       0      0  *.5353                 *.*
udp6       0      0  fe80::1%lo0.123        *.*
udp4       0      0  *.*                    *.*
Active LOCAL (UNIX) domain sockets
Address          Type   Recv-Q Send-Q            Inode             Conn             Refs          Nextref Addr
ff3ba2b3c45d1a8b stream      0      0                0 ff3ba2b3c45d1bd3                0                0 /var/run/mDNSResponder
`
	if got, want := parseNetstat(out), []int{123, 5353, 5432, 8080}; !reflect.DeepEqual(got, want) {
		t.Errorf("parseNetstat = %v, want %v", got, want)
	}
}

func TestHostListenerRule(t *testing.T) {
	r := hostListenerRule([]int{8080, 53, 5432, 8080})
	var got []string
	for _, f := range r.filters {
		got = append(got, f.sbpl())
	}
	want := []string{`(remote ip "localhost:53")`, `(remote ip "localhost:5432")`, `(remote ip "localhost:8080")`}
	if !reflect.DeepEqual(got, want) || r.act != deny {
		t.Errorf("rule %v %v, want deny %v", r.act, got, want)
	}
}
