//go:build !linux

package policy

import (
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/triage-sandbox/triage-sandbox/hostread"
)

// direntBufSize: os.File.ReadDir needs no buffer of ours.
const direntBufSize = 0

// readDir reads at most n entries of dir; more says there were others.
// A directory the caller cannot read is skipped: the sandbox, running as
// the caller or as the workspace owner, could not list it either.
func readDir(rd *hostread.Recorder, dir string, n int, _ []byte) (entries []dirEntry, more bool) {
	rd.NoteList(dir)
	f, err := os.Open(dir)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	des, err := f.ReadDir(n)
	for _, e := range des {
		entries = append(entries, dirEntry{name: e.Name(), dir: e.IsDir(), sock: e.Type()&fs.ModeSocket != 0})
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return entries, false
	}
	if len(des) == n {
		if extra, _ := f.ReadDir(1); len(extra) > 0 {
			more = true
		}
	}
	return entries, more
}
