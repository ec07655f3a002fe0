// Package fastpath is what the front (cmd/triage-sandbox-front) and a
// keeper (package warm) share for `run --session NAME`, or a pooled
// `run`, without a CLI start: where the session's keeper is, the messages of the
// exchange, and the client the front runs. It links no policy compiler,
// backend or CLI, so the front stays as light as an empty Go program.
//
// The exchange, on a connection to the keeper's socket after its hello:
// the front sends one Request (its whole argv, its working directory, a
// digest of its environment, and the identity of the CLI it would run);
// the keeper either answers Fallback before anything ran (the front then
// runs the full CLI, as it would have) or runs the command exactly as the
// CLI's `run` does, in its own process — the same flag parsing, policy
// compilation (a keeper's policy that differs is a Fallback), gate,
// output pipeline and audit — sending what `run` writes on its stdout and
// stderr as frames, then an Exit with `run`'s exit code. A Cancel from the
// front is the CLI's SIGINT; the connection going away ends the command,
// as for an attached run.
package fastpath

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// DirEnv overrides DefaultDir (tests, several independent installations).
const DirEnv = "TRIAGE_SANDBOX_WARM_DIR"

// DefaultDir is where keepers keep their sockets and records: only this
// user can reach them.
func DefaultDir() string {
	if d := os.Getenv(DirEnv); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/run/triage-sandbox/warm"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "triage-sandbox", "warm")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("triage-sandbox-%d", os.Geteuid()), "warm")
}

// Frame types, shared with package warm's (one byte before each frame's
// length and payload).
const (
	FHello    byte = 1  // keeper → client: its sandbox (the front reads only its version)
	FStdout   byte = 5  // keeper → front: what `run` wrote on stdout
	FStderr   byte = 6  // keeper → front: what `run` wrote on stderr
	FRequest  byte = 9  // front → keeper: a Request
	FCancel   byte = 10 // front → keeper: the front was interrupted (SIGINT, SIGTERM)
	FExit     byte = 11 // keeper → front: an Exit, the last frame
	FFallback byte = 12 // keeper → front: a Fallback, before anything ran
)

// MaxMessage bounds one frame's payload (as package protocol/keeper's).
const MaxMessage = 1 << 20

// Request is the front's `run`.
type Request struct {
	Protocol int `json:"protocol"`
	// Args are the front's arguments after the program name ("run", ...).
	Args []string `json:"args"`
	// Cwd is the front's working directory, absolute.
	Cwd string `json:"cwd"`
	// Env is the front's environment: the policy is compiled for it, and
	// the keeper runs only when it has the same itself (SameEnv), as the
	// CLI also reads variables of its own process directly.
	Env []string `json:"env"`
	// CLI is FileID of the CLI the front would run: the keeper runs only
	// when it is that very binary.
	CLI string `json:"cli"`
}

// Validate implements what protocol.Versioned checks.
func (r *Request) Validate() error {
	switch {
	case len(r.Args) == 0 || r.Args[0] != "run":
		return errors.New("args: not a run")
	case !filepath.IsAbs(r.Cwd):
		return fmt.Errorf("cwd %q: not absolute", r.Cwd)
	case slices.ContainsFunc(r.Env, func(kv string) bool { return !strings.Contains(kv, "=") }):
		return errors.New("env: an entry without =")
	case r.CLI == "":
		return errors.New("cli: empty")
	}
	return nil
}

// Exit is how `run` ended in the keeper.
type Exit struct {
	Protocol int `json:"protocol"`
	Code     int `json:"code"`
}

// Validate implements what protocol.Versioned checks.
func (e *Exit) Validate() error {
	if e.Code < 0 || e.Code > 255 {
		return fmt.Errorf("code %d: not an exit code", e.Code)
	}
	return nil
}

// Fallback says why the keeper did not run the command: the front runs
// the full CLI instead.
type Fallback struct {
	Protocol int    `json:"protocol"`
	Reason   string `json:"reason"`
}

// Validate implements what protocol.Versioned checks.
func (f *Fallback) Validate() error {
	if f.Reason == "" {
		return errors.New("reason: empty")
	}
	return nil
}

// SetProtocol sets this build's version (Encode calls it).
func (r *Request) SetProtocol()  { r.Protocol = protocol.Version }
func (e *Exit) SetProtocol()     { e.Protocol = protocol.Version }
func (f *Fallback) SetProtocol() { f.Protocol = protocol.Version }

// DecodeRequest reads a front's request, strictly.
func DecodeRequest(b []byte) (Request, error) {
	if len(b) <= MaxMessage {
		if r, ok := decodeCanonical(b); ok {
			// What Versioned checks after its decode.
			if err := protocol.CheckVersion("the front", r.Protocol); err != nil {
				return Request{}, err
			}
			if err := r.Validate(); err != nil {
				return r, fmt.Errorf("the front: %w", err)
			}
			return r, nil
		}
	}
	var r Request
	return r, protocol.Versioned("the front", b, MaxMessage, &r)
}

// DecodeExit reads a keeper's exit, strictly.
func DecodeExit(b []byte) (Exit, error) {
	var e Exit
	return e, protocol.Versioned("the keeper", b, MaxMessage, &e)
}

// DecodeFallback reads a keeper's fallback, strictly.
func DecodeFallback(b []byte) (Fallback, error) {
	var f Fallback
	return f, protocol.Versioned("the keeper", b, MaxMessage, &f)
}

// placeVars are what a shell or a process start sets per directory or
// command, which no CLI code reads but through os.Getwd (which checks it):
// the working directory is compared as Request.Cwd instead. SHLVL is the
// shell's nesting, which bash lowers when it execs a subshell's last
// command: the same script's runs differ by it (a keeper host per value,
// and every fast run falling back, before); no code of ours reads it, and
// the sandbox's environment is compiled from the front's own.
var placeVars = []string{"PWD=", "OLDPWD=", "_=", "SHLVL="}

// SameEnv: the two environments are the same but for placeVars.
func SameEnv(a, b []string) bool { return envDigest(a) == envDigest(b) }

// EnvDigest is envDigest: a keeper host serves the clients of one
// environment (package warm), as a keeper serves a front of its own.
func EnvDigest(env []string) string { return envDigest(env) }

// envDigest is a digest of an environment (NAME=VALUE entries) but for
// placeVars, the same whatever their order.
func envDigest(env []string) string {
	sorted := slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return slices.ContainsFunc(placeVars, func(p string) bool { return strings.HasPrefix(kv, p) })
	})
	slices.Sort(sorted)
	h := sha256.New()
	for _, kv := range sorted {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(kv)))
		h.Write(n[:])
		h.Write([]byte(kv))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// FileID identifies the file at path as it is now (device, inode, size,
// modification time): a rebuilt or replaced binary has another. A
// keeper's own is FileID("/proc/self/exe"): the file it runs, even when
// a rebuild has since replaced the one at its path.
func FileID(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", fmt.Errorf("%s: no device and inode", path)
	}
	return fmt.Sprintf("%d:%d:%d:%d", st.Dev, st.Ino, fi.Size(), fi.ModTime().UnixNano()), nil
}

// WriteFrame writes one frame in one write.
func WriteFrame(w io.Writer, t byte, payload []byte) error {
	if len(payload) > MaxMessage {
		return fmt.Errorf("a frame of %d bytes is over the %d-byte bound", len(payload), MaxMessage)
	}
	b := make([]byte, 5, 5+len(payload))
	b[0] = t
	binary.BigEndian.PutUint32(b[1:], uint32(len(payload)))
	_, err := w.Write(append(b, payload...))
	return err
}

// ReadFrame reads one frame, bounded.
func ReadFrame(r io.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > MaxMessage {
		return 0, nil, errors.New("a frame over the bound; the other side is not a triage-sandbox keeper")
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return 0, nil, err
	}
	return hdr[0], b, nil
}
