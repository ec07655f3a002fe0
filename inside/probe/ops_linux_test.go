package probe

import (
	"strings"
	"testing"
)

// Mount lines as runc (a kernel that shows nodev) and gVisor (whose
// mountinfo never does) give them.
const (
	runcInfo = "1 0 0:1 / / ro - overlay overlay ro\n" +
		"2 1 0:2 / /usr ro,nosuid,nodev - ext4 /dev/vda ro\n"
	gvisorInfo = "1 0 0:1 / / ro - 9p none ro\n" +
		"2 1 0:2 / /usr ro,nosuid - 9p none ro\n"
	suidInfo = "1 0 0:1 / / rw,relatime - ext4 /dev/vda rw\n"
)

func TestSuidMounts(t *testing.T) {
	refused := func(string) string { return "ENXIO" }
	opened := func(string) string { return "" }
	missing := func(string) string { return "ENOENT" }
	tests := []struct {
		name, info, device string
		open               func(string) string
		found, nodev       string
		detail             string
	}{
		{"nosuid,nodev shown", runcInfo, "", nil, "false", "shown", "every one nosuid,nodev"},
		{"no nosuid", suidInfo, "/d/kmsg", refused, "true", "shown", "set-id bits honoured: /usr on /"},
		// gVisor: nosuid shows, nodev never does; the device decides.
		{"nodev unshown, device refused", gvisorInfo, "/d/kmsg", refused, "false", "refused", "a host device node does not open (ENXIO)"},
		{"nodev unshown, device opens", gvisorInfo, "/d/kmsg", opened, "true", "shown", "device nodes honoured"},
		{"nodev unshown, no device", gvisorInfo, "", nil, "false", "unknown", "no host device node to try"},
		{"nodev unshown, device not there", gvisorInfo, "/d/kmsg", missing, "false", "unknown", "no host device node to try"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			open := tt.open
			if open == nil {
				open = func(string) string { t.Fatal("the device was tried"); return "" }
			}
			o := suidMounts(tt.info, []string{"/usr"}, tt.device, open)
			if o.Values["found"] != tt.found || o.Values["nodev"] != tt.nodev {
				t.Errorf("found=%s nodev=%s, want %s %s (%s)", o.Values["found"], o.Values["nodev"], tt.found, tt.nodev, o.Detail)
			}
			if !strings.Contains(o.Detail, tt.detail) {
				t.Errorf("detail %q lacks %q", o.Detail, tt.detail)
			}
		})
	}
}
