package confirm

import "sync"

// Memory holds the command lines the operator allowed "for this session".
// It matches exact normalised command lines (use Quote(argv)), never a
// command name or a prefix: allowing "rm x" says nothing about "rm -rf ~",
// and a bare "rm" remembered on its own matches only an argv of exactly
// ["rm"]. It lives as long as the value (one run); nothing is persisted.
// The zero value is ready to use and it is safe for concurrent use. A nil
// *Memory remembers nothing and allows nothing.
type Memory struct {
	mu      sync.Mutex
	allowed map[string]struct{}
}

// Allowed reports whether exactly this command line was remembered.
func (m *Memory) Allowed(normalised string) bool {
	if m == nil || normalised == "" {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.allowed[normalised]
	return ok
}

// Remember allows exactly this command line for the rest of the session and
// reports whether it did. It refuses the empty string (an empty argv, or a
// caller's bug: there is no command to allow) and a nil Memory.
func (m *Memory) Remember(normalised string) bool {
	if m == nil || normalised == "" {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.allowed == nil {
		m.allowed = make(map[string]struct{})
	}
	m.allowed[normalised] = struct{}{}
	return true
}
