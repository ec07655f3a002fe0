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
	for _, tt := range []struct {
		name  string
		ports []int
		open  int
		want  []string
	}{
		{"every listener and DNS", []int{8080, 53, 5432, 8080}, 0,
			[]string{`(remote ip "localhost:53")`, `(remote ip "localhost:5432")`, `(remote ip "localhost:8080")`}},
		{"the run's proxy left open", []int{8080, 41234, 5432}, 41234,
			[]string{`(remote ip "localhost:53")`, `(remote ip "localhost:5432")`, `(remote ip "localhost:8080")`}},
		{"DNS stays denied", []int{53}, 53, []string{`(remote ip "localhost:53")`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := hostListenerRule(tt.ports, tt.open)
			var got []string
			for _, f := range r.filters {
				got = append(got, f.sbpl())
			}
			if !reflect.DeepEqual(got, tt.want) || r.act != deny {
				t.Errorf("rule %v %v, want deny %v", r.act, got, tt.want)
			}
		})
	}
}
