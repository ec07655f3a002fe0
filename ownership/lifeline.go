package ownership

import (
	"io"
	"time"
)

// RemovedWord is what an owner writes on its watcher's lifeline once it
// removed what it owned itself: an owner that exits right after would
// otherwise look dead to the watcher, which would remove it again.
const RemovedWord = 'r'

// OwnerGone reads an owner's lifeline (a pipe only the owner writes) to
// its end and reports whether the watcher has work left: the owner did
// not say it removed what it owned, and it is no longer alive (pid owner,
// started at ownerStart), so the end came from its death, kill -9 too.
func OwnerGone(lifeline io.Reader, owner int, ownerStart string) bool {
	var word [1]byte
	n, _ := io.ReadFull(lifeline, word[:])
	_, _ = io.Copy(io.Discard, lifeline)
	if n == 1 && word[0] == RemovedWord {
		return false
	}
	// A process killed with SIGKILL closes its descriptors before it
	// becomes a zombie; under load the watcher can wake in between and
	// see it alive. Give a dying owner a bounded while to be seen gone.
	deadline := time.Now().Add(ownerExitWait)
	for OwnerAlive(owner, ownerStart) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// ownerExitWait bounds how long a watcher waits, once the lifeline ended
// without a word, for its owner to be seen gone (an owner that closed it
// on purpose and lives on keeps what it owns).
const ownerExitWait = 10 * time.Second
