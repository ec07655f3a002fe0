package sbpl

import (
	"fmt"
	"strings"
)

// knownOps are the operation names the evaluator accepts: those in Apple's
// and the anchors' profiles. A name ending in * is a wildcard over every
// operation it prefixes.
var knownOps = map[string]bool{}

func init() {
	for _, op := range strings.Fields(`
		file* file-read* file-read-data file-read-metadata file-read-xattr file-test-existence
		file-write* file-write-data file-write-create file-write-unlink file-write-mode
		file-write-owner file-write-flags file-write-xattr file-write-acl file-write-setugid
		file-write-times file-ioctl file-link file-map-executable file-mount file-unmount
		file-clone file-revoke file-search file-chroot file-issue-extension
		process* process-exec process-exec* process-exec-interpreter process-fork
		process-info* process-info-pidinfo process-info-listpids process-info-setcontrol
		process-info-dirtycontrol process-info-rusage process-info-codesignature signal
		network* network-bind network-inbound network-outbound system-socket
		mach* mach-lookup mach-register mach-host* mach-host-special-port-set
		mach-priv-host-port mach-priv-task-port mach-task-name
		ipc* ipc-posix* ipc-posix-sem ipc-posix-shm* ipc-posix-shm-read* ipc-posix-shm-read-data
		ipc-posix-shm-read-metadata ipc-posix-shm-write* ipc-posix-shm-write-create
		ipc-posix-shm-write-data ipc-posix-shm-write-unlink ipc-sysv*
		sysctl* sysctl-read sysctl-write iokit* iokit-open iokit-get-properties
		iokit-set-properties pseudo-tty user-preference* user-preference-read
		user-preference-write distributed-notification-post appleevent-send lsopen nvram*
	`) {
		knownOps[op] = true
	}
}

// isWildcard reports whether op names a family of operations.
func isWildcard(op string) bool { return strings.HasSuffix(op, "*") }

// opRank says how closely a rule's operation name matches the concrete
// operation asked about: -1 no match, 1000 the operation itself, else the
// length of the wildcard's prefix (file-read* is closer than file*).
func opRank(ruleOp, op string) int {
	if ruleOp == op {
		return 1000
	}
	if isWildcard(ruleOp) && strings.HasPrefix(op, strings.TrimSuffix(ruleOp, "*")) {
		return len(ruleOp) - 1
	}
	return -1
}

// checkConcrete refuses an operation a request cannot be about.
func checkConcrete(op string) error {
	if !knownOps[op] || isWildcard(op) {
		return fmt.Errorf("%q is not a concrete operation", op)
	}
	return nil
}
