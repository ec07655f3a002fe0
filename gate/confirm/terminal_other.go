//go:build !linux

package confirm

import (
	"context"
	"fmt"
	"time"
)

// OpenTerminal fails outside Linux, so every confirm rule denies there: the
// raw-mode, flush and poll handling is written and tested for Linux only.
func OpenTerminal() (*Asker, error) {
	return nil, fmt.Errorf("%w: confirm prompts are supported on Linux only", ErrNoTerminal)
}

func (a *Asker) ask(context.Context, int, Prompt, time.Duration) (Answer, error) {
	return No, fmt.Errorf("%w: confirm prompts are supported on Linux only", ErrNoTerminal)
}
