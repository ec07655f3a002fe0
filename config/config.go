package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/BurntSushi/toml"

	"github.com/triage-sandbox/triage-sandbox/hostread"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// FileName is the name Find looks for.
const FileName = "triage.toml"

// Find returns the path of triage.toml in dir or the nearest parent, or "" if none.
func Find(dir string) (string, error) {
	all, err := FindAll(dir)
	if err != nil || len(all) == 0 {
		return "", err
	}
	return all[0], nil
}

// FindAll returns every triage.toml from dir up to the filesystem root,
// nearest first: the outer ones decide whether the nearest may be trusted.
func FindAll(dir string) ([]string, error) { return Options{}.FindAll(dir) }

// FindAll is the package's FindAll, reading through o.Reads.
func (o Options) FindAll(dir string) ([]string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("find %s: %w", FileName, err)
	}
	if fi, err := o.Reads.Stat(abs); err != nil {
		return nil, fmt.Errorf("find %s: %w", FileName, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("find %s: %s is not a directory", FileName, abs)
	}
	var found []string
	for d := abs; ; {
		p := filepath.Join(d, FileName)
		fi, err := o.Reads.Stat(p)
		switch {
		case err == nil && !fi.IsDir():
			found = append(found, p)
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("find %s: %w", FileName, err)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return found, nil
		}
		d = parent
	}
}

// Options are what Load and Parse need from their caller.
type Options struct {
	// Backends are the names [sandbox] backend accepts, in the order a
	// problem lists them: the backend registry's names. Empty means the
	// caller does not know them (a test of something else): any name
	// passes here, and the registry refuses an unknown one when the
	// backend is made.
	Backends []string
	// Reads, when set, notes what is read (package hostread).
	Reads *hostread.Recorder
}

// Load reads and validates the file at path without knowing the backend
// names; see Options.Load.
func Load(path string) (*File, error) { return Options{}.Load(path) }

// Parse is Options.Parse without knowing the backend names.
func Parse(name string, data []byte, root string) (*File, error) {
	return Options{}.Parse(name, data, root)
}

// Load reads and validates the file at path. All problems in the file are
// reported together in one error (errors.Join of *Problem values), not only
// the first. Messages name path as given; File.Path is made absolute.
func (o Options) Load(path string) (*File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, joinProblems([]*Problem{{File: path, Msg: err.Error(), Err: err}})
	}
	data, err := o.Reads.ReadFile(path)
	if err != nil {
		p := &Problem{File: path, Msg: err.Error(), Err: err}
		if errors.Is(err, fs.ErrNotExist) {
			p.Hint = "create it or pass --config"
		}
		return nil, joinProblems([]*Problem{p})
	}
	f, err := o.Parse(path, data, filepath.Dir(abs))
	if err != nil {
		return nil, err
	}
	f.Path = abs
	return f, nil
}

// Parse is Load on bytes already read; name is used in messages (usually the
// path) and becomes File.Path, root is the workspace root.
func (o Options) Parse(name string, data []byte, root string) (*File, error) {
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		return nil, joinProblems([]*Problem{syntaxProblem(name, data, err)})
	}
	c := &checker{file: name, lines: indexLines(string(data)), backends: o.Backends}
	f := Default(root)
	f.Path = name
	c.document(f, raw)
	if err := joinProblems(c.probs); err != nil {
		return nil, err
	}
	f.Warnings = c.warnings
	return f, nil
}

// syntaxProblem turns a decoder error into a Problem at the line it names.
func syntaxProblem(name string, data []byte, err error) *Problem {
	p := &Problem{File: name, Msg: "syntax error: " + err.Error(), Hint: "fix the TOML syntax", Err: err}
	var pe toml.ParseError
	var ppe *toml.ParseError
	switch {
	case errors.As(err, &pe):
	case errors.As(err, &ppe) && ppe != nil:
		pe = *ppe
	default:
		return p
	}
	p.Line = pe.Position.Line
	// The parser counts an offending newline as the start of the next line;
	// the byte offset says which line the user has to fix.
	if s := pe.Position.Start; s > 0 && s <= len(data) {
		p.Line = 1 + bytes.Count(data[:s], []byte("\n"))
	}
	p.Msg = "syntax error: " + pe.Message
	return p
}

// Default returns the built-in configuration with root as the workspace root
// (Path ""). Nothing is set: policy code applies the defaults.
func Default(root string) *File {
	r := filepath.Clean(root)
	if abs, err := filepath.Abs(r); err == nil {
		r = abs
	}
	return &File{Root: r}
}

// Resolve returns [sandbox] with the role's table ([sandbox.agent] or
// [sandbox.reproducer]) applied on top: shallow override, any key set in the
// role table replaces the [sandbox] one (each key's merge in sandboxKeys).
// role is "agent" or "reproducer"; any other role gets [sandbox] alone. The
// result shares no memory with f.
func (f *File) Resolve(role profiles.Role) Sandbox {
	var over Sandbox
	switch role {
	case profiles.RoleAgent:
		over = f.Agent
	case profiles.RoleReproducer:
		over = f.Reproducer
	}
	var out Sandbox
	for _, k := range sandboxKeys {
		k.merge(&out, &over, &f.Sandbox)
	}
	return out
}

// TimeoutKey names the key that decides role's timeout, as a message to
// the operator writes it: the one that set it (set true), or, when the
// role runs on its default, the one to set ([repro] timeout for a
// reproducer, as ai-triager's own file has it; [sandbox.agent] timeout
// for the agent). Precedence is Resolve's and policy's: the role's table,
// then [sandbox], then [repro].
func (f *File) TimeoutKey(role profiles.Role) (key string, set bool) {
	own := "[sandbox." + string(role) + "] timeout"
	switch {
	case role == profiles.RoleAgent && f.Agent.Timeout != nil,
		role == profiles.RoleReproducer && f.Reproducer.Timeout != nil:
		return own, true
	case f.Sandbox.Timeout != nil:
		return "[sandbox] timeout", true
	case role == profiles.RoleReproducer:
		return "[repro] timeout", f.Repro.Timeout != nil
	}
	return own, false
}

// NetworkKey names the key that decides role's network, as the operator
// writes it: the role's table when it sets it, else [sandbox], else the
// role's table (the one to set).
func (f *File) NetworkKey(role profiles.Role) string {
	switch {
	case role == profiles.RoleAgent && f.Agent.Network != nil,
		role == profiles.RoleReproducer && f.Reproducer.Network != nil:
	case f.Sandbox.Network != nil:
		return "[sandbox] network"
	}
	return "[sandbox." + string(role) + "] network"
}
