package ownership

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"
)

// halfWrittenAge: a directory without a readable ownership record is left
// alone this long, since a start may still be writing it.
const halfWrittenAge = time.Minute

// Stale is a directory whose owner is gone or whose lifetime passed.
type Stale[T any] struct {
	Name, Dir string
	// Record is its ownership record; Readable says whether there was one.
	Record   T
	Readable bool
}

// StaleDirs lists the directories under parent (those keep says are
// candidates; nil keeps all) whose ownership record, the JSON file named
// record in each, does not say live; a directory without a readable record
// counts once it is halfWrittenAge old. A sweep judges by these records
// alone, never by what else runs on the machine.
func StaleDirs[T any](parent, record string, keep func(name string) bool, live func(T) bool) ([]Stale[T], error) {
	entries, err := os.ReadDir(parent)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Stale[T]
	for _, e := range entries {
		if !e.IsDir() || (keep != nil && !keep(e.Name())) {
			continue
		}
		s := Stale[T]{Name: e.Name(), Dir: filepath.Join(parent, e.Name())}
		raw, err := os.ReadFile(filepath.Join(s.Dir, record))
		if err == nil {
			err = json.Unmarshal(raw, &s.Record)
		}
		s.Readable = err == nil
		switch {
		case s.Readable && live(s.Record):
			continue
		case !s.Readable:
			if fi, serr := os.Stat(s.Dir); serr != nil || time.Since(fi.ModTime()) < halfWrittenAge {
				continue
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// OwnerAlive: pid is still the process that started at start.
func OwnerAlive(pid int, start string) bool {
	return pid > 0 && start != "" && ProcessStart(pid) == start
}
