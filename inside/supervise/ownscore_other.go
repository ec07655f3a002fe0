//go:build !linux

package supervise

import "errors"

// OwnScore is a per-process OOM score, which only Linux has.
type OwnScore struct{}

// OpenOwnScore: only Linux has a per-process OOM score.
func OpenOwnScore() (*OwnScore, error) { return nil, errors.New("no per-process OOM score here") }

// Raised runs fork, not raised.
func (o *OwnScore) Raised(fork func()) (raised bool, err error) {
	fork()
	return false, nil
}
