// Package procargs reads a macOS kern.procargs2 buffer: how another process
// of the same user was started (its argv and environment), since macOS has
// no /proc.
package procargs

import (
	"bytes"
	"encoding/binary"
)

// Parse splits a kern.procargs2 buffer: argc as a native int32, the
// executable's path, NUL padding, then argc NUL-terminated arguments and
// the NUL-terminated environment.
func Parse(b []byte) (argv, env []string) {
	if len(b) < 4 {
		return nil, nil
	}
	argc := int(int32(binary.NativeEndian.Uint32(b)))
	rest := b[4:]
	end := bytes.IndexByte(rest, 0)
	if end < 0 {
		return nil, nil
	}
	rest = bytes.TrimLeft(rest[end:], "\x00")
	next := func() (string, bool) {
		if len(rest) == 0 {
			return "", false
		}
		end := bytes.IndexByte(rest, 0)
		if end < 0 {
			end = len(rest)
		}
		s := string(rest[:end])
		rest = rest[min(end+1, len(rest)):]
		return s, true
	}
	for len(argv) < argc {
		s, ok := next()
		if !ok {
			return argv, nil
		}
		argv = append(argv, s)
	}
	for {
		s, ok := next()
		if !ok || s == "" {
			return argv, env
		}
		env = append(env, s)
	}
}
