package confine

// devNodes are the host's device nodes Enter binds into /dev; required ones
// make Enter fail when the host lacks them.
var devNodes = []struct {
	name     string
	required bool
}{
	{"null", true}, {"zero", true}, {"full", true}, {"random", true}, {"urandom", true}, {"tty", false},
}

// LandlockRule is one path Restrict grants under Landlock.
type LandlockRule struct {
	Path string `json:"path"`
	// Access is "ro" (read, list, execute), "rw" (everything, including
	// moving files between such paths) or "dev" (read, write and ioctl on
	// the device files below).
	Access string `json:"access"`
	// Optional rules are skipped when the path does not exist.
	Optional bool `json:"optional,omitempty"`
}

// LandlockRules are the paths Restrict grants: the plan's own, then the
// ones for what Enter builds itself (/proc, /sys, /dev). Everything else in
// the new root, bound or not, is out of reach for reads and writes alike.
func LandlockRules(p Plan) []LandlockRule {
	var rs []LandlockRule
	for _, r := range p.Landlock.ReadOnly {
		rs = append(rs, LandlockRule{Path: r, Access: "ro"})
	}
	for _, r := range p.Landlock.ReadWrite {
		rs = append(rs, LandlockRule{Path: r, Access: "rw"})
	}
	rs = append(rs, LandlockRule{Path: "/proc", Access: "ro"}, LandlockRule{Path: "/dev", Access: "ro"})
	if p.Sys {
		rs = append(rs, LandlockRule{Path: "/sys", Access: "ro"})
	}
	for _, d := range devNodes {
		rs = append(rs, LandlockRule{Path: "/dev/" + d.name, Access: "dev", Optional: !d.required})
	}
	return append(rs, LandlockRule{Path: "/dev/pts", Access: "dev"}, LandlockRule{Path: "/dev/shm", Access: "rw"})
}
