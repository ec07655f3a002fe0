package launch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// MaskKinds sorts masked paths for a runtime that drops the spec's masked
// paths (runtimes.Traits.IgnoresMaskedPaths), whose masks must be mounts:
// the files (regular ones) to bind something empty over and the
// directories to mount an empty tmpfs over, by the host's kind (every
// masked path lies under a host directory bound at its own path). A path
// that does not exist is left out, as runc leaves it; so is a socket, FIFO
// or device node, which such a runtime cannot mount over (the trait says
// why none is needed).
func MaskKinds(masked []string) (files, dirs []string, err error) {
	for _, m := range masked {
		fi, err := os.Stat(m)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, nil, fmt.Errorf("the masked path %s: %w", m, err)
		case fi.IsDir():
			dirs = append(dirs, m)
		case fi.Mode().IsRegular():
			files = append(files, m)
		}
	}
	return files, dirs, nil
}
