package sandboxinit

import "runtime"

// Thread is one OS thread, locked for the holder's life, that runs jobs one
// at a time: the warden's thread, from which the holder starts every child
// (see warden). A backend that must prepare that thread while it still can
// (the local helper empties its bounding set there before it gives up the
// capability to) makes it with NewThread and passes it in HoldOptions.
type Thread struct {
	jobs chan func()
}

// NewThread starts the thread and runs setup on it first. When setup fails
// the thread ends (it is never unlocked, so the runtime does not reuse it)
// and NewThread returns the error.
func NewThread(setup func() error) (*Thread, error) {
	t := &Thread{jobs: make(chan func())}
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if setup != nil {
			if err := setup(); err != nil {
				ready <- err
				return
			}
		}
		ready <- nil
		for f := range t.jobs {
			f()
		}
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	return t, nil
}

// Do runs f on the thread and waits for it.
func (t *Thread) Do(f func()) {
	done := make(chan struct{})
	t.jobs <- func() { defer close(done); f() }
	<-done
}
