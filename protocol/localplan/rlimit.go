package localplan

import (
	"maps"
	"slices"
)

// rlimitResources maps the names a plan uses to Linux's resource numbers
// (include/uapi/asm-generic/resource.h, the same on amd64 and arm64; spelled
// out because golang.org/x/sys/unix has the host OS's numbers, and plans
// are rendered on macOS too).
var rlimitResources = map[string]int{
	"CPU": 0, "FSIZE": 1, "DATA": 2, "STACK": 3, "CORE": 4, "RSS": 5, "NPROC": 6, "NOFILE": 7,
	"MEMLOCK": 8, "AS": 9, "LOCKS": 10, "SIGPENDING": 11, "MSGQUEUE": 12, "NICE": 13, "RTPRIO": 14,
	"RTTIME": 15,
}

// RlimitNames lists the names Rlimit.Name accepts, sorted.
func RlimitNames() []string { return slices.Sorted(maps.Keys(rlimitResources)) }

// RlimitResource is Linux's resource number of the limit named name.
func RlimitResource(name string) (int, bool) {
	r, ok := rlimitResources[name]
	return r, ok
}
