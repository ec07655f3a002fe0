package docker

import "github.com/triage-sandbox/triage-sandbox/ownership"

// SetGuess makes b's first start create its container for runtime name
// while the daemon says its default.
func SetGuess(b *Backend, name string) { b.guess = name }

// RemovedWord is what an owner writes its watcher once it removed the
// container.
const RemovedWord = ownership.RemovedWord
