package seatbelt

import (
	"sort"
	"strconv"
	"strings"
)

// parseNetstat reads `netstat -an` as macOS prints it and returns the
// local ports of every listening TCP socket and every bound UDP socket:
//
//	tcp4  0  0  127.0.0.1.5432  *.*  LISTEN
//	udp46 0  0  *.5353          *.*
//
// The port is after the last dot of the local address; "*" is no port.
func parseNetstat(out string) []int {
	seen := map[int]bool{}
	var ports []int
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		switch {
		case strings.HasPrefix(f[0], "tcp"):
			if len(f) < 6 || f[5] != "LISTEN" {
				continue
			}
		case strings.HasPrefix(f[0], "udp"):
		default:
			continue
		}
		i := strings.LastIndexByte(f[3], '.')
		if i < 0 {
			continue
		}
		port, err := strconv.Atoi(f[3][i+1:])
		if err != nil || port < 1 || port > 65535 || seen[port] {
			continue
		}
		seen[port] = true
		ports = append(ports, port)
	}
	sort.Ints(ports)
	return ports
}
