package insidebin

import (
	"debug/elf"
	"fmt"
	"runtime"
)

// Static reports whether the ELF binary at path needs no dynamic loader.
// Off Linux the binary never enters a Linux container, so it does not matter.
func Static(path string) (bool, error) {
	if runtime.GOOS != "linux" {
		return true, nil
	}
	f, err := elf.Open(path)
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false, nil
		}
	}
	return true, nil
}
