package gate

import (
	"path"
	"sync"

	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// scratchDirs hold temporary files that may be deleted without harm:
// inside a sandbox they are its own (on macOS, TMPDIR is under
// /var/folders). Without a sandbox (Config.Scratch false) there are none:
// the host's /tmp holds other programs' files.
func (g *Gate) scratchDirs() []string {
	if !g.scratch {
		return nil
	}
	return []string{"/tmp", "/var/tmp", "/private/tmp", "/var/folders", "/private/var/folders"}
}

// dangerousTarget says why deleting (or chmod-ing) a path recursively
// would reach too far, or "" when it stays inside what the command may
// touch: relative paths that do not climb out, and paths strictly inside
// the workspace, a writable path or a scratch directory. The sandbox's
// HOME is scratch too (the policy gives each sandbox a fresh one), so a
// path strictly inside it is allowed; the home directory itself is not.
func (g *Gate) dangerousTarget(a arg) string {
	if a.dynamic {
		return "a path only known at run time"
	}
	t := a.text
	switch {
	case t == "":
		return ""
	case strings.HasPrefix(t, "~"):
		user, rest, _ := strings.Cut(t[1:], "/")
		if user != "" {
			return "another user's home directory"
		}
		if !g.scratch {
			return "a path in the home directory, which is the user's own (no sandbox gives it a fresh one)"
		}
		return insideScratch("the home directory", rest)
	}
	p := path.Clean(t)
	everything := false
	if base := path.Base(p); isEverything(base) {
		// Every entry of the directory: as bad as the directory itself.
		p, everything = path.Dir(p), true
	}
	if !path.IsAbs(p) {
		switch {
		case p == ".":
			if everything {
				return "everything in the current directory"
			}
			return "the current directory"
		case p == ".." || strings.HasPrefix(p, "../"):
			return "a path outside the current directory"
		}
		return ""
	}
	if p == "/" {
		return "the root directory"
	}
	roots := append(append([]string{g.workspace}, g.writable...), g.scratchDirs()...)
	for _, root := range roots {
		if root != "" && (root == "/" || strings.HasPrefix(p, root+"/")) {
			return ""
		}
	}
	return "an absolute path outside the workspace and writable paths"
}

// isEverything reports a glob that matches every entry of a directory.
func isEverything(base string) bool {
	return base == "*" || base == ".*" || base == ".[!.]*" || base == "..?*" || base == "{*,.*}"
}

// insideScratch judges a path given relative to a scratch directory
// (what follows ~/ or $TMPDIR/): the directory itself, everything in it
// or a path climbing out of it is too far; what is strictly inside is not.
func insideScratch(dir, rest string) string {
	rel := path.Clean("./" + rest)
	if isEverything(path.Base(rel)) {
		rel = path.Dir(rel)
	}
	switch {
	case rel == ".":
		return dir
	case rel == ".." || strings.HasPrefix(rel, "../"):
		return "a path that climbs out of " + dir
	}
	return ""
}

// scratchVariable says what a variable naming a scratch directory the
// policy gives every sandbox is called in reasons; "" for any other
// variable, and for every variable when there is no sandbox or the
// command line assigns it itself (TMPDIR= rm -rf $TMPDIR/x).
func (s scope) scratchVariable(name string) string {
	if !s.gate.scratch || s.assigned[name] {
		return ""
	}
	switch name {
	case "HOME":
		return "the home directory"
	case "TMPDIR":
		return "the temporary directory"
	}
	return ""
}

// scratchTarget judges a dynamic path made of a scratch variable ($HOME,
// ${TMPDIR}, "$TMPDIR", ${TMPDIR:-/tmp}, a variable holding a mktemp
// result) followed by literal text. ok is false for any other word.
func (s scope) scratchTarget(a arg) (why string, ok bool) {
	tempVars := s.tempVars
	parts := unquotedParts(a)
	if len(parts) == 0 {
		return "", false
	}
	pe, isParam := parts[0].(*syntax.ParamExp)
	if !isParam || !plainParam(pe) {
		return "", false
	}
	dir := s.scratchVariable(pe.Param.Value)
	if tempVars[pe.Param.Value] {
		dir = "a directory made by mktemp"
	}
	if dir == "" || pe.Exp != nil && !s.gate.scratchDefault(pe.Exp) {
		return "", false
	}
	var rest strings.Builder
	for _, p := range parts[1:] {
		switch p := p.(type) {
		case *syntax.Lit:
			rest.WriteString(p.Value)
		case *syntax.SglQuoted:
			rest.WriteString(p.Value)
		default:
			return "", false
		}
	}
	why = insideScratch(dir, rest.String())
	if why == dir && tempVars[pe.Param.Value] {
		return "", true // the fresh directory mktemp made, itself
	}
	return why, true
}

// loopValues is a path made of a for-loop variable over literal words
// and literal text ("$d", $d/x, "${d}.bak"), once for each value it takes;
// ok is false for any other word.
func loopValues(a arg, loopVars map[string][]string) (values []arg, ok bool) {
	if len(loopVars) == 0 {
		return nil, false
	}
	parts := unquotedParts(a)
	var prefix, suffix strings.Builder
	name := ""
	for _, p := range parts {
		text := ""
		switch p := p.(type) {
		case *syntax.Lit:
			text = p.Value
		case *syntax.SglQuoted:
			text = p.Value
		case *syntax.ParamExp:
			if name != "" || !plainParam(p) || p.Exp != nil {
				return nil, false
			}
			if _, known := loopVars[p.Param.Value]; !known {
				return nil, false
			}
			name = p.Param.Value
			continue
		default:
			return nil, false
		}
		if name == "" {
			prefix.WriteString(text)
		} else {
			suffix.WriteString(text)
		}
	}
	if name == "" {
		return nil, false
	}
	for _, v := range loopVars[name] {
		values = append(values, literal(prefix.String()+v+suffix.String()))
	}
	return values, true
}

// unquotedParts are a word's parts with double quotes opened.
func unquotedParts(a arg) []syntax.WordPart {
	var parts []syntax.WordPart
	for _, p := range a.parts {
		if dq, isDq := p.(*syntax.DblQuoted); isDq {
			parts = append(parts, dq.Parts...)
			continue
		}
		parts = append(parts, p)
	}
	return parts
}

// plainParam reports $NAME or ${NAME…} without indirection, length,
// width, index, slice or replacement (a default, ${X:-y}, is allowed).
func plainParam(pe *syntax.ParamExp) bool {
	return pe.Param != nil && !pe.Excl && !pe.Length && !pe.Width && pe.Index == nil && pe.Slice == nil && pe.Repl == nil
}

// scratchDefault accepts ${TMPDIR:-/tmp}: a default that is itself a
// scratch directory.
func (g *Gate) scratchDefault(e *syntax.Expansion) bool {
	if e.Op != syntax.DefaultUnset && e.Op != syntax.DefaultUnsetOrNull || e.Word == nil {
		return false
	}
	v, ok := plainLiteral(e.Word)
	return ok && slices.Contains(g.scratchDirs(), path.Clean(v))
}

// isHomeDir reports a path that is a home directory: ~, ~user, $HOME,
// /root, /home/user, /Users/user.
func isHomeDir(a arg) bool {
	t := strings.TrimSuffix(a.text, "/")
	if a.dynamic {
		return t == "$HOME" || t == "${HOME}" || t == `"$HOME"` || t == `"${HOME}"`
	}
	if strings.HasPrefix(t, "~") && !strings.Contains(t, "/") {
		return true
	}
	p := path.Clean(t)
	return p == "/root" || path.Dir(p) == "/home" || path.Dir(p) == "/Users"
}

// mayHoldHome reports a path that is, or holds, a home directory: a
// search from it can find credential files.
func mayHoldHome(a arg) bool {
	if isHomeDir(a) {
		return true
	}
	if a.dynamic {
		return false
	}
	p := path.Clean(a.text)
	return p == "/" || p == "/home" || p == "/Users"
}

// isDiskDevice reports whether a path is a disk (or memory) device.
func isDiskDevice(p string) bool {
	p = path.Clean(p)
	dev, ok := strings.CutPrefix(p, "/dev/")
	if !ok {
		return false
	}
	for _, prefix := range []string{"sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "mapper/", "dm-", "md", "loop"} {
		if strings.HasPrefix(dev, prefix) {
			return true
		}
	}
	return dev == "mem" || dev == "kmem" || dev == "port"
}

// credentialPath is one of the credential paths under a home directory, as
// the path components an argument is split into.
type credentialPath struct {
	path  string   // as the list names it: "~/.ssh"
	parts []string // ".ssh"
}

// credentials are the home-relative entries of profiles.CredentialPaths,
// the list the policy makes unreadable, and markers are strings one of
// which an argument must contain to name any of them (a cheap first test).
// Computed on first use (a start of the binary that judges nothing does
// not pay for it); never changed.
var credentialTables = sync.OnceValues(func() ([]credentialPath, []string) {
	return credentialTable(profiles.CredentialPaths())
})

func credentialTable(list []string) ([]credentialPath, []string) {
	var table []credentialPath
	var markers []string
	for _, p := range list {
		rel, ok := strings.CutPrefix(p, "~/")
		if !ok {
			continue // not under a home directory: the gate does not look for it
		}
		parts := splitPathArg(rel)
		table = append(table, credentialPath{path: p, parts: parts})
		marker := strings.ToLower(parts[0])
		if strings.HasPrefix(marker, ".") {
			marker = "."
		}
		if !slices.Contains(markers, marker) {
			markers = append(markers, marker)
		}
	}
	return table, markers
}

// homeCredentialPaths are the credential paths the gate looks for, without
// their "~/", for the rule's description.
func homeCredentialPaths() []string {
	credentials, _ := credentialTables()
	out := make([]string, len(credentials))
	for i, c := range credentials {
		out[i] = strings.TrimPrefix(c.path, "~/")
	}
	return out
}

// splitPathArg splits an argument into the components secretPath compares.
func splitPathArg(text string) []string {
	return strings.FieldsFunc(text, func(r rune) bool { return strings.ContainsRune("/=:@ \t\n\"'{}", r) })
}

// secretPath returns the credential path an argument names or could
// expand to, or "". It looks at path components under a home directory
// (~, ~user, $HOME, any variable, which may hold one, /root, /home/user,
// /Users/user), so --key=~/.ssh/id_rsa and $H/.aws count while a
// project's own .docker/ directory does not. Components are compared
// without case (macOS file systems ignore it) after dropping ./ and
// resolving ../, and a glob component counts when it could match.
func secretPath(text string) string {
	if !maySpellSecret(text) {
		return "" // the common case, cheaply
	}
	credentials, _ := credentialTables()
	parts := cleanParts(splitPathArg(text))
	for i := 1; i < len(parts); i++ {
		if !homeAt(parts, i) {
			continue
		}
		for _, c := range credentials {
			if i+len(c.parts) <= len(parts) && matchParts(parts[i:i+len(c.parts)], c.parts) {
				return c.path
			}
		}
	}
	return ""
}

// maySpellSecret is a cheap first test: the text holds a marker of some
// credential path (in any case), or a glob character.
func maySpellSecret(text string) bool {
	if strings.ContainsAny(text, "*?[") {
		return true
	}
	lower := strings.ToLower(text)
	_, credentialMarkers := credentialTables()
	return slices.ContainsFunc(credentialMarkers, func(m string) bool { return strings.Contains(lower, m) })
}

// cleanParts drops "." components and lets ".." undo the one before.
func cleanParts(parts []string) []string {
	out := parts[:0:0]
	for _, p := range parts {
		switch {
		case p == ".":
		case p == ".." && len(out) > 1:
			out = out[:len(out)-1]
		default:
			out = append(out, p)
		}
	}
	return out
}

// homeAt reports whether parts[i] is directly inside a home directory,
// or inside a directory a variable names (which may be one).
func homeAt(parts []string, i int) bool {
	prev := parts[i-1]
	switch {
	case strings.HasPrefix(prev, "~"), strings.HasPrefix(prev, "$"), prev == "root":
		return true
	case i >= 2 && (parts[i-2] == "home" || parts[i-2] == "Users" || parts[i-2] == "$"):
		return true
	}
	return false
}

// matchParts compares path components to a credential path's, without
// case; a component holding a glob matches what the shell could expand
// it to.
func matchParts(got, want []string) bool {
	for i := range want {
		if !matchPart(got[i], want[i]) {
			return false
		}
	}
	return true
}

func matchPart(got, want string) bool {
	if !strings.ContainsAny(got, "*?[") {
		return strings.EqualFold(got, want)
	}
	// The shell's globs match a leading dot only when it is spelled out.
	if strings.HasPrefix(want, ".") && !strings.HasPrefix(got, ".") {
		return false
	}
	ok, err := path.Match(strings.ToLower(got), strings.ToLower(want))
	return ok || err != nil // a pattern the gate cannot read: it cannot tell
}
