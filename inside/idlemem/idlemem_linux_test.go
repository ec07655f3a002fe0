package idlemem

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestReadOnlyOfBinary: only the read-only mappings of the file that
// holds the code, never a writable one, another file's or an anonymous one.
func TestReadOnlyOfBinary(t *testing.T) {
	maps := `00400000-00800000 r-xp 00000000 fd:01 4242 /bin/x
00800000-00a00000 r--p 00400000 fd:01 4242 /bin/x
00a00000-00a40000 rw-p 00600000 fd:01 4242 /bin/x
00a40000-00a80000 rw-p 00000000 00:00 0
7f0000000000-7f0000100000 r--p 00000000 fd:01 777 /usr/lib/locale/x
7fff00000000-7fff00002000 r-xp 00000000 00:00 0 [vdso]
`
	got, err := readOnlyOfBinary([]byte(maps), 0x401000)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != [2]uint64{0x400000, 0x800000} || got[1] != [2]uint64{0x800000, 0xa00000} {
		t.Errorf("ranges %x, want the text and the read-only data only", got)
	}
	for _, tc := range []struct {
		name, maps string
		pc         uint64
	}{
		{"pc in an anonymous mapping", maps, 0xa41000},
		{"pc in no mapping", maps, 0x10},
		{"a bad line", "00400000 r-xp 0 fd:01 1 /x\n", 0x400000},
		{"a bad range", "00800000-00400000 r-xp 0 fd:01 1 /x\n", 0x400000},
	} {
		if _, err := readOnlyOfBinary([]byte(tc.maps), tc.pc); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// TestReleaseLowersRSS: a process whose text is resident keeps running
// after Release, with less of it resident.
func TestReleaseLowersRSS(t *testing.T) {
	before := rssFile(t)
	start := time.Now()
	if err := Release(); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	after := rssFile(t)
	t.Logf("RssFile %d kB -> %d kB in %v", before, after, took)
	if after >= before {
		t.Errorf("RssFile %d kB after Release, %d kB before: nothing dropped", after, before)
	}
	// Still runs: the dropped pages come back on use.
	if s := strings.Repeat("x", 3); s != "xxx" {
		t.Fatal(s)
	}
}

func rssFile(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "RssFile:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no RssFile")
	return 0
}
