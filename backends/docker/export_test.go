package docker

// SetGuess makes b's first start create its container for runtime name
// while the daemon says its default.
func SetGuess(b *Backend, name string) { b.guess = name }
