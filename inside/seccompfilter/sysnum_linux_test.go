//go:build linux && (amd64 || arm64)

package seccompfilter

import (
	"maps"
	"testing"
)

func TestSyscallNumbersMatchHost(t *testing.T) {
	arch, rules, common := hostSyscalls()
	if !maps.Equal(syscallNumbers[arch], rules) {
		for name, nr := range rules {
			if got := syscallNumbers[arch][name]; got != nr {
				t.Errorf("%s %s: table says %d, x/sys %d", arch, name, got, nr)
			}
		}
		t.Errorf("%s: table has %d syscalls, x/sys list %d", arch, len(syscallNumbers[arch]), len(rules))
	}
	for name, nr := range common {
		if got := commonSyscalls[arch][name]; got != nr {
			t.Errorf("%s %s (test table): %d, x/sys %d", arch, name, got, nr)
		}
	}
}
