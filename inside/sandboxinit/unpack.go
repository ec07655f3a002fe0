package sandboxinit

import (
	"fmt"
	"io"

	"github.com/triage-sandbox/triage-sandbox/protocol"
	"github.com/triage-sandbox/triage-sandbox/stage"
)

// RunUnpack is the __unpack entry: a Pack stream on in unpacked into the
// spec's directories, before any command exists (the kubernetes backend's
// init container fills the pod's copy of the workspace this way; the
// holder's container then mounts those directories read-only).
func RunUnpack(spec protocol.Unpack, in io.Reader, errOut io.Writer) int {
	if err := guardFromCommand(nil); err != nil { // pods start as the sandbox identity
		fmt.Fprintf(errOut, "triage-sandbox: %v\n", err)
		return exitcodeRefused
	}
	if err := stage.Unpack(in, spec.Paths); err != nil {
		fmt.Fprintf(errOut, "triage-sandbox: unpacking the workspace's copy: %v\n", err)
		return exitcodeRefused
	}
	// Nothing follows the archive (Pack writes no padding past its end
	// blocks), so the unpacker ends here; it does not wait for its stdin
	// to close (under gVisor, driven by containerd's runc shim, that close
	// may never arrive).
	return 0
}
