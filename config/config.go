package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/BurntSushi/toml"

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
func FindAll(dir string) ([]string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("find %s: %w", FileName, err)
	}
	if fi, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("find %s: %w", FileName, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("find %s: %s is not a directory", FileName, abs)
	}
	var found []string
	for d := abs; ; {
		p := filepath.Join(d, FileName)
		fi, err := os.Stat(p)
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

// Load reads and validates the file at path. All problems in the file are
// reported together in one error (errors.Join of *Problem values), not only
// the first. Messages name path as given; File.Path is made absolute.
func Load(path string) (*File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, joinProblems([]*Problem{{File: path, Msg: err.Error(), Err: err}})
	}
	data, err := os.ReadFile(path)
	if err != nil {
		p := &Problem{File: path, Msg: err.Error(), Err: err}
		if errors.Is(err, fs.ErrNotExist) {
			p.Hint = "create it or pass --config"
		}
		return nil, joinProblems([]*Problem{p})
	}
	f, err := Parse(path, data, filepath.Dir(abs))
	if err != nil {
		return nil, err
	}
	f.Path = abs
	return f, nil
}

// Parse is Load on bytes already read; name is used in messages (usually the
// path) and becomes File.Path, root is the workspace root.
func Parse(name string, data []byte, root string) (*File, error) {
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		return nil, joinProblems([]*Problem{syntaxProblem(name, data, err)})
	}
	c := &checker{file: name, lines: indexLines(string(data))}
	f := Default(root)
	f.Path = name
	c.document(f, raw)
	if err := joinProblems(c.probs); err != nil {
		return nil, err
	}
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
// [sandbox.reproducer]) applied on top: shallow override, any field set in the
// role table replaces the [sandbox] one. role is "agent" or "reproducer"; any
// other role gets [sandbox] alone. The result shares no memory with f.
func (f *File) Resolve(role profiles.Role) Sandbox {
	var o Sandbox
	switch role {
	case profiles.RoleAgent:
		o = f.Agent
	case profiles.RoleReproducer:
		o = f.Reproducer
	}
	b := f.Sandbox
	return Sandbox{
		Backend:         pick(o.Backend, b.Backend),
		Network:         pick(o.Network, b.Network),
		Image:           pick(o.Image, b.Image),
		Env:             pickSlice(o.Env, b.Env),
		Secrets:         pickSlice(o.Secrets, b.Secrets),
		Writable:        pickSlice(o.Writable, b.Writable),
		AllowAll:        pick(o.AllowAll, b.AllowAll),
		SetEnv:          pickMap(o.SetEnv, b.SetEnv),
		Timeout:         pick(o.Timeout, b.Timeout),
		Memory:          pick(o.Memory, b.Memory),
		CPUs:            pick(o.CPUs, b.CPUs),
		Pids:            pick(o.Pids, b.Pids),
		TmpfsSize:       pick(o.TmpfsSize, b.TmpfsSize),
		WritableSize:    pick(o.WritableSize, b.WritableSize),
		WritableInodes:  pick(o.WritableInodes, b.WritableInodes),
		FileSize:        pick(o.FileSize, b.FileSize),
		ShmSize:         pick(o.ShmSize, b.ShmSize),
		Runtime:         pick(o.Runtime, b.Runtime),
		Pool:            pick(o.Pool, b.Pool),
		WarmIdle:        pick(o.WarmIdle, b.WarmIdle),
		User:            pick(o.User, b.User),
		OutputLimit:     pick(o.OutputLimit, b.OutputLimit),
		OutputCeiling:   pick(o.OutputCeiling, b.OutputCeiling),
		Deny:            pickSlice(o.Deny, b.Deny),
		Confirm:         pickSlice(o.Confirm, b.Confirm),
		GateDisable:     pickSlice(o.GateDisable, b.GateDisable),
		GateConfirm:     pickSlice(o.GateConfirm, b.GateConfirm),
		AllowDynamic:    pick(o.AllowDynamic, b.AllowDynamic),
		AuditLog:        pick(o.AuditLog, b.AuditLog),
		AcceptWeaker:    pickSlice(o.AcceptWeaker, b.AcceptWeaker),
		AllowToolConfig: pickSlice(o.AllowToolConfig, b.AllowToolConfig),
		ReadOnly:        pickSlice(o.ReadOnly, b.ReadOnly),
	}
}

// pick returns a copy of the override when set, else of the base.
func pick[T any](override, base *T) *T {
	p := override
	if p == nil {
		p = base
	}
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// pickSlice treats a nil slice as unset; an empty one is set and overrides.
func pickSlice[T any](override, base []T) []T {
	if override != nil {
		return slices.Clone(override)
	}
	return slices.Clone(base)
}

func pickMap(override, base map[string]string) map[string]string {
	if override != nil {
		return maps.Clone(override)
	}
	return maps.Clone(base)
}
