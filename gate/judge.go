package gate

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Bounds on the work one check may do. Past them the command is denied
// (rule "limit"): a command this large or this nested is not one to run
// unread.
const (
	maxInput  = 64 << 10 // bytes of command text
	maxDepth  = 8        // nested sh -c, eval, $(…), <(…), git aliases…
	maxParsed = 1 << 20  // bytes of shell parsed in all, nested code included
	// minParseCost is what each parse counts against maxParsed at least, so
	// that thousands of tiny nested scripts (git -c core.pager=x …) end too.
	minParseCost = 256
	maxVisits    = 1 << 20 // syntax nodes and commands visited in all
	// maxBrackets bounds how deeply ( and { nest, counted before parsing and
	// regardless of quotes: the parser recurses once (in arithmetic some
	// twenty times) per level, and real commands stay far below it.
	maxBrackets = 200
)

// judge holds the state of one check. The strictest verdict found wins;
// among equals, the first. Checking stops at the first deny.
type judge struct {
	gate     *Gate
	decision Decision
	depth    int // current nesting of code in code
	parsed   int
	visits   int
	finals   map[*syntax.CallExpr]layer // memo of finalLayer
	pipes    map[*syntax.BinaryCmd]bool // pipelines already judged as a whole
	// cwd is where cd went, relative paths resolve against it: "" while
	// in the starting directory, a path, or "$DIR" when it cannot tell.
	cwd string
	// tempVars are variables assigned a mktemp result ($(mktemp -d)).
	tempVars map[string]bool
	// assigned are the scratch variables (HOME, TMPDIR) the command line
	// sets, exports, reads into or unsets anywhere: they no longer name
	// the sandbox's scratch (TMPDIR=; rm -rf $TMPDIR/x deletes /x).
	assigned map[string]bool
	// literals are the variables the code being parsed sets, with their
	// values when every setting is literal text (nil values otherwise).
	literals map[string]*literalVar
	// loopVars are for-loop variables over literal words: the values they
	// take, each judged where the variable is used as a path.
	loopVars map[string][]string
	// piped are the words a literal echo or printf earlier in a pipeline
	// gives the stage after it, by that stage (what xargs appends there).
	piped map[*syntax.Stmt][]string
	// pipedText is that text whole, by stage (the lines parallel runs).
	pipedText map[*syntax.Stmt]string
	// prefixes are VAR=value words in front of a command: they set the
	// variable for that command only, not for the statements after it.
	prefixes map[*syntax.Assign]bool
	// aliases are aliases defined earlier in the command line, as words.
	aliases map[string][]arg
	// passArgs are functions defined earlier that run their arguments
	// as a command (f() { "$@"; }).
	passArgs map[string]bool
	// words are the literal words seen (CheckArgvWords), scripts those in
	// a script's place, written the files it writes; seenWords their set.
	words, scripts, written []string
	seenWords               map[string]bool
	// downloaded are files a downloader wrote earlier in the command line.
	downloaded map[string]bool
	// current maps redirections to the statement they belong to.
	current map[*syntax.Redirect]*syntax.Stmt
}

// literalVar is what a line sets a variable to: every literal value (nil
// once any setting is not literal), and where it is first set.
type literalVar struct {
	values []string
	first  uint
}

func (g *Gate) newJudge() *judge {
	return &judge{
		gate:     g,
		decision: Decision{Verdict: Allow},
		finals:   map[*syntax.CallExpr]layer{},
		pipes:    map[*syntax.BinaryCmd]bool{},
	}
}

func (j *judge) stopped() bool { return j.decision.Verdict == Deny }

// maxWords bounds CheckArgvWords' words.
const maxWords = 512

// noteWord keeps a literal word for CheckArgvWords, and, when relative, a
// path (inCwd) and an earlier cd went to a known directory, that
// directory's path to it.
func (j *judge) noteWord(a arg, inCwd bool) {
	j.words = j.addWord(j.words, "w", a, inCwd)
}

// noteScript keeps a literal word in a script's place: a shell's or an
// interpreter's script, source's file, a command named by its path.
func (j *judge) noteScript(a arg) {
	j.scripts = j.addWord(j.scripts, "s", a, true)
}

// noteWritten keeps a literal file the command line writes (a
// redirection's target, a downloader's output).
func (j *judge) noteWritten(a arg) {
	j.written = j.addWord(j.written, "o", a, true)
}

func (j *judge) addWord(list []string, kind string, a arg, inCwd bool) []string {
	if a.dynamic || a.text == "" || strings.HasPrefix(a.text, "-") {
		return list
	}
	add := func(w string) {
		if len(list) < maxWords && !j.seenWords[kind+w] {
			if j.seenWords == nil {
				j.seenWords = map[string]bool{}
			}
			j.seenWords[kind+w] = true
			list = append(list, w)
		}
	}
	add(a.text)
	if inCwd && j.cwd != "" && !strings.HasPrefix(j.cwd, "$") && !strings.HasPrefix(j.cwd, "~") && !path.IsAbs(a.text) {
		add(path.Join(j.cwd, a.text))
	}
	return list
}

// record keeps a finding if it is stricter than what was found so far.
func (j *judge) record(v Verdict, rule, reason, command string, hint ...string) {
	if v.severity() > j.decision.Verdict.severity() {
		j.decision = Decision{Verdict: v, Rule: rule, Reason: reason, Command: command}
		if len(hint) > 0 && v == Deny {
			j.decision.Hint = hint[0]
		}
	}
}

// rule reports that a default rule matched, with the verdict the
// configuration gives it (none when it is disabled).
func (j *judge) rule(name, reason, command string, hint ...string) {
	if v, on := j.gate.verdicts[name]; on {
		j.record(v, name, reason, command, hint...)
	}
}

// dynamic reports a command or code only known at run time. Only the
// agent role without allow_dynamic refuses those.
func (j *judge) dynamic(reason, command string) {
	if !j.gate.dynamicAllowed {
		j.record(Deny, ruleDynamic, reason+"; the gate cannot judge it", command)
	}
}

func (j *judge) limit(reason string) {
	j.record(Deny, ruleLimit, reason, "")
}

// patterns matches the operator's patterns against one command text.
func (j *judge) patterns(text string) {
	for _, p := range j.gate.deny {
		if p.match(text) {
			j.record(Deny, "deny:"+p.source, "it matches the operator's deny pattern", text)
			return
		}
	}
	for _, p := range j.gate.confirm {
		if p.match(text) {
			j.record(Confirm, "confirm:"+p.source, "it matches the operator's confirm pattern", text)
			return
		}
	}
}

// tick counts one unit of work and reports whether the budget allows more.
func (j *judge) tick() bool {
	j.visits++
	if j.visits > maxVisits {
		j.limit(fmt.Sprintf("the command has more than %d parts to judge", maxVisits))
		return false
	}
	return true
}

// nested runs check one level deeper, refusing past maxDepth.
func (j *judge) nested(check func()) {
	if j.depth >= maxDepth {
		j.limit(fmt.Sprintf("code nested more than %d levels deep (sh -c, eval, $(…)…)", maxDepth))
		return
	}
	j.depth++
	defer func() { j.depth-- }()
	check()
}
