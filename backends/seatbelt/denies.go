package seatbelt

import (
	"path/filepath"
	"sort"

	"github.com/triage-sandbox/triage-sandbox/policy"
)

// fileDenyOps are denied on every credential and masked path. The
// wildcards cover the families; the specific operations are named too,
// because Seatbelt is reported to let a rule naming an operation beat a
// wildcard whatever their order: naming both makes the deny win under
// either reading. file-link is here and allowed nowhere: Seatbelt matches
// paths, not inodes, so a hard link would carry a denied file's content
// (or a read-only file's writability) to a new name.
var fileDenyOps = []string{
	"file*", "file-read*", "file-read-data", "file-read-metadata", "file-read-xattr", "file-test-existence",
	"file-write*", "file-write-data", "file-write-create", "file-write-unlink", "file-write-mode",
	"file-write-owner", "file-write-flags", "file-write-xattr", "file-write-acl", "file-write-setugid",
	"file-link", "file-ioctl", "file-map-executable",
}

// moveOps are denied on every directory above a denied path: renaming an
// ancestor away (mv ~/.aws ~/x) would take the path out from under its
// deny, and creating one could plant a symlink where it will be.
var moveOps = []string{"file-write-unlink", "file-write-create"}

// denies renders the last phase: mach doors, the credential and masked
// paths under both their spellings (as written and canonical), the
// directories above them, the unix sockets among them, and the host's
// listeners.
func (r *renderer) denies() error {
	r.prof.add(phaseDeny, r.machDenyRule())
	var paths []string
	seen := map[string]bool{}
	for _, list := range [][]string{r.p.Unreadable, r.p.Masked} {
		for _, u := range list {
			c, err := r.canon("the unreadable path "+u, u)
			if err != nil {
				return err
			}
			for _, s := range []string{filepath.Clean(u), c} {
				if !seen[s] {
					seen[s] = true
					paths = append(paths, s)
				}
			}
		}
	}
	sort.Strings(paths)
	var files, socks []filter
	var above []readable
	for _, p := range paths {
		f := pathFilter{kind: "subpath", param: r.ps.name("DENY", p)}
		r.rendered.Masked = append(r.rendered.Masked, p)
		files = append(files, f)
		socks = append(socks, unixFilter{side: "remote", path: f})
		above = append(above, readable{path: p})
	}
	if len(files) > 0 {
		r.prof.add(phaseDeny, rule{act: deny, ops: fileDenyOps, filters: files, tagged: true,
			comment: "Credentials, keychains, browser profiles, histories, triage-sandbox's own state, runtime sockets\nand the paths masked under readable mounts: no read, write, link or exec, whatever allowed it above."})
		r.prof.add(phaseDeny, rule{act: deny, ops: []string{"network-outbound"}, filters: socks, tagged: true,
			comment: "No connecting to a unix socket among them (Docker, agents)."})
		var anc []filter
		for _, a := range ancestors(above) {
			anc = append(anc, pathFilter{kind: "literal", param: r.ps.name("ABOVE", a)})
		}
		if len(anc) > 0 {
			r.prof.add(phaseDeny, rule{act: deny, ops: moveOps, filters: anc, tagged: true,
				comment: "No renaming or creating the directories above them (the move bypass)."})
		}
	}
	open := 0
	if h := r.p.Network.HostProxy; r.p.Network.Mode == policy.NetworkProxy && h != nil {
		open = h.Port
	}
	r.prof.add(phaseDeny, hostListenerRule(r.in.HostPorts, open))
	return nil
}
