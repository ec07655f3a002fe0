package gate

import (
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// Verdict is what the gate says about a command.
type Verdict string

const (
	Allow   Verdict = "allow"
	Deny    Verdict = "deny"
	Confirm Verdict = "confirm"
)

// severity orders verdicts: the strictest one found wins.
func (v Verdict) severity() int {
	switch v {
	case Deny:
		return 2
	case Confirm:
		return 1
	}
	return 0
}

// Config is what the policy compiles in (from triage.toml [sandbox] keys).
type Config struct {
	// Role is profiles.RoleAgent or profiles.RoleReproducer; "" means
	// the agent's, the stricter.
	Role profiles.Role
	// Deny are extra patterns, ai-triager style fnmatch globs (e.g.
	// "gh issue close*", "*git push*"), matched against each normalised
	// simple command (see Normalise), each wrapper level of it, and the raw
	// text of the whole command. A match denies it.
	Deny []string
	// Confirm are extra patterns whose match needs the operator's confirmation.
	Confirm []string
	// Disable names default rules that do not apply.
	Disable []string
	// ConfirmRules names default rules whose match needs the operator's
	// confirmation instead of denying.
	ConfirmRules []string
	// AllowDynamic lets the agent role run commands whose name or code is
	// only known at run time. The reproducer role always may.
	AllowDynamic bool
	// Workspace is the absolute workspace root: recursive deletes inside it
	// are allowed.
	Workspace string
	// Writable are the absolute writable paths: recursive deletes inside
	// them are allowed.
	Writable []string
	// Scratch says the command runs in a sandbox whose HOME and TMPDIR
	// are its own fresh scratch and whose /tmp is its own, so paths inside
	// them may be deleted. It is false (nothing is scratch) when there is
	// no sandbox: allow_all runs in the user's real home.
	Scratch bool
}

// Gate judges commands. It is immutable and safe for concurrent use.
type Gate struct {
	verdicts       map[string]Verdict // default rules in force and their verdicts
	deny, confirm  []pattern
	dynamicAllowed bool
	workspace      string
	writable       []string
	scratch        bool // HOME, TMPDIR and /tmp are the sandbox's own (Config.Scratch)
	ruleIndex           // the checks of the rules in force
}

// New compiles a configuration. Its errors are one line and name the
// triage.toml key at fault.
func New(cfg Config) (*Gate, error) {
	g := &Gate{verdicts: map[string]Verdict{}, scratch: cfg.Scratch}
	switch cfg.Role {
	case "", profiles.RoleAgent:
		g.dynamicAllowed = cfg.AllowDynamic
	case profiles.RoleReproducer:
		g.dynamicAllowed = true
	default:
		return nil, fmt.Errorf("gate: unknown role %q (known: %s, %s)", cfg.Role, profiles.RoleAgent, profiles.RoleReproducer)
	}
	for _, r := range DefaultRules() {
		g.verdicts[r.Name] = r.Verdict
	}
	disabled := map[string]bool{}
	for _, name := range cfg.Disable {
		if err := checkRuleName("gate_disable", name); err != nil {
			return nil, err
		}
		disabled[name] = true
		delete(g.verdicts, name)
	}
	for _, name := range cfg.ConfirmRules {
		if err := checkRuleName("gate_confirm", name); err != nil {
			return nil, err
		}
		if disabled[name] {
			return nil, fmt.Errorf("[sandbox] gate_confirm: rule %q is also in gate_disable; keep it in one of them", name)
		}
		g.verdicts[name] = Confirm
	}
	var err error
	if g.deny, err = compilePatterns("deny", cfg.Deny); err != nil {
		return nil, err
	}
	if g.confirm, err = compilePatterns("confirm", cfg.Confirm); err != nil {
		return nil, err
	}
	if cfg.Workspace != "" {
		if !path.IsAbs(cfg.Workspace) {
			return nil, fmt.Errorf("gate: workspace %q is not an absolute path", cfg.Workspace)
		}
		g.workspace = path.Clean(cfg.Workspace)
	}
	for _, w := range cfg.Writable {
		if !path.IsAbs(w) {
			return nil, fmt.Errorf("gate: writable path %q is not absolute", w)
		}
		g.writable = append(g.writable, path.Clean(w))
	}
	g.ruleIndex = indexRules(ruleTable(), g.verdicts)
	return g, nil
}

func checkRuleName(key, name string) error {
	for _, r := range DefaultRules() {
		if r.Name == name {
			return nil
		}
	}
	return fmt.Errorf("[sandbox] %s: unknown rule %q (known: %s)", key, name, strings.Join(ruleNames(), ", "))
}

// Decision is the gate's judgement of one command.
type Decision struct {
	Verdict Verdict
	// Rule names what decided: a default rule, "deny:<pattern>" or
	// "confirm:<pattern>" for the operator's patterns, "dynamic" for a
	// command only known at run time, "parse" for one the shell cannot
	// parse, "limit" for one too large or too deeply nested to judge.
	Rule    string
	Reason  string // why, one line
	Command string // the normalised simple command that matched ("" for allow)
	// Hint is a form of the command that would be allowed, when there is
	// one (node_modules/.bin/tape for npx tape); "" otherwise.
	Hint string
}

// Message is the text to hand back to whoever asked to run the command.
func (d Decision) Message() string {
	var b strings.Builder
	switch d.Verdict {
	case Deny:
		b.WriteString("DENIED: ")
	case Confirm:
		b.WriteString("NEEDS CONFIRMATION: ")
	default:
		return "allowed"
	}
	fmt.Fprintf(&b, "%s (rule %s)", oneLine(d.Reason, 300), oneLine(d.Rule, 200))
	if d.Command != "" {
		fmt.Fprintf(&b, ": `%s`", oneLine(d.Command, 300))
	}
	switch {
	case d.Verdict == Deny && d.Hint != "":
		fmt.Fprintf(&b, ". %s", oneLine(d.Hint, 300))
	case d.Verdict == Deny:
		b.WriteString(". Do not retry it in another form.")
	default:
		b.WriteString(" needs the operator's confirmation. Wait for it; do not retry it in another form.")
	}
	return b.String()
}

// oneLine makes s safe to show on one line: control characters become
// escapes and long text is cut.
func oneLine(s string, max int) string {
	var b strings.Builder
	n := 0
	for i, r := range s {
		if n == max {
			b.WriteString("…")
			break
		}
		n++
		switch {
		case r == utf8.RuneError && invalidByteAt(s, i):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(" ")
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == '\u0085':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// CheckArgv judges an argv that is executed without a shell: one simple
// command whose words are literal. A shell started with -c has its code
// parsed and judged.
func (g *Gate) CheckArgv(argv []string) Decision {
	d, _ := g.CheckArgvWords(argv)
	return d
}

// Words are what CheckArgvWords found in a command line.
type Words struct {
	// All are the literal words, as the shell will see them.
	All []string
	// Scripts are those in a script's place: a shell's or an
	// interpreter's script, source's file, a command named by its path.
	Scripts []string
	// Written are files the command line writes itself: a redirection's
	// target, a downloader's output.
	Written []string
}

// CheckArgvWords is CheckArgv that also returns the literal words of the
// command line as the shell will see them (quotes removed; nested sh -c
// code, redirection targets included), each relative one also joined
// with the directory an earlier cd went to: the files the command may
// name, for the guard to read. Bounded; on a denial, only those seen
// before it.
func (g *Gate) CheckArgvWords(argv []string) (Decision, Words) {
	j := g.newJudge()
	size := 0
	for _, a := range argv {
		size += len(a) + 1
	}
	switch {
	case len(argv) == 0:
		j.record(Deny, ruleParse, "empty command", "")
	case size > maxInput:
		j.record(Deny, ruleLimit, fmt.Sprintf("the command is longer than %d bytes", maxInput), "")
	default:
		j.patterns(strings.TrimSpace(strings.Join(argv, " ")))
		j.command(literals(argv), nil)
	}
	return j.decision, Words{All: j.words, Scripts: j.scripts, Written: j.written}
}

// CheckShell judges a shell script (bash syntax).
func (g *Gate) CheckShell(script string) Decision {
	j := g.newJudge()
	if len(script) > maxInput {
		j.record(Deny, ruleLimit, fmt.Sprintf("the command is longer than %d bytes", maxInput), "")
		return j.decision
	}
	j.script(script)
	return j.decision
}

// Normalise is the text the gate matches patterns against and by which a
// confirmation is remembered: the command that does the work once the
// wrappers in front of it are removed, its name without a path and in lower
// case, its arguments joined by single spaces.
func Normalise(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	layers, _ := resolveLayers(literals(argv))
	return layers[len(layers)-1].text()
}

// invalidByteAt tells whether s holds a byte that is not UTF-8 at i.
func invalidByteAt(s string, i int) bool {
	_, size := utf8.DecodeRuneInString(s[i:])
	return size == 1
}
