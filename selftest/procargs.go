package selftest

import (
	"bytes"
	"encoding/binary"
)

// procArgv reads the argv out of a kern.procargs2 buffer (macOS): argc as
// a native int32, the executable's path, NUL padding, then argc
// NUL-terminated arguments and the environment, which is left out.
func procArgv(b []byte) []string {
	if len(b) < 4 {
		return nil
	}
	argc := int(int32(binary.NativeEndian.Uint32(b)))
	rest := b[4:]
	end := bytes.IndexByte(rest, 0)
	if end < 0 {
		return nil
	}
	rest = bytes.TrimLeft(rest[end:], "\x00")
	var argv []string
	for len(argv) < argc && len(rest) > 0 {
		end := bytes.IndexByte(rest, 0)
		if end < 0 {
			end = len(rest)
		}
		argv = append(argv, string(rest[:end]))
		rest = rest[min(end+1, len(rest)):]
	}
	return argv
}
