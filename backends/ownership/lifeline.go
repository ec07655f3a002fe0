package ownership

import "io"

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
	return !OwnerAlive(owner, ownerStart)
}
