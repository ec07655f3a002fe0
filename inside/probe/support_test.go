//go:build linux || darwin

package probe

import (
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
)

// The Linux-only ops exist everywhere under their names; off Linux they
// observe Unsupported instead of a denial the selftest could mistake.
func TestLinuxOnlyOps(t *testing.T) {
	for _, op := range linuxOnlyOps {
		if _, ok := ops[op]; !ok {
			t.Errorf("%s is not an op", op)
			continue
		}
		o := run(Step{Op: op, Args: map[string]string{"pid": "1", "token": "no-such-token-anywhere"}}, "/nonexistent")
		if o.Unsupported() != (runtime.GOOS != "linux") || RunsOn(op, runtime.GOOS) == o.Unsupported() {
			t.Errorf("%s on %s: %+v", op, runtime.GOOS, o)
		}
	}
	for op := range ops {
		if !RunsOn(op, "linux") {
			t.Errorf("%s does not run on Linux", op)
		}
	}
}

// allocate takes real blocks: a sparse file would not fill anything.
func TestAllocateIsNotSparse(t *testing.T) {
	const size = 8 << 20
	p := filepath.Join(t.TempDir(), "fill.bin")
	got, err := allocate(p, size)
	if err != nil || got != size {
		t.Fatalf("allocate: %d, %v", got, err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Size() != size || st.Blocks*512 < size {
		t.Errorf("size %d, %d bytes allocated", fi.Size(), st.Blocks*512)
	}
}
