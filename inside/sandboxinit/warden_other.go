//go:build !linux

package sandboxinit

import (
	"context"
	"errors"
)

// newWarden: only Linux lets the holder collect orphans (a subreaper).
func newWarden(*Thread) (*warden, error) {
	return nil, errors.New("no child subreaper on this system")
}

func (w *warden) watch(ctx context.Context) {}

func (w *warden) sweepLocked() {}
