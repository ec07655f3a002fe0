//go:build linux || darwin

package selftest

import "io"

type closers []io.Closer

func (c closers) Close() error {
	for _, x := range c {
		x.Close()
	}
	return nil
}
