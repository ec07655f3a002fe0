package gate

import (
	"mvdan.cc/sh/v3/syntax"
)

// The walker (walk, words, wrappers, paths, pipeline…) reads a command
// line and hands the rules one Invocation per site it reaches; the rules
// are pure functions over it. They never see the walker (judge) nor its
// state, only the snapshot an Invocation carries, so a rule cannot change
// what the walker knows and the walker decides nothing a rule decides.

// site is where in a command line a rule looks.
type site uint8

const (
	siteCommand  site = iota // a simple command: each layer, wrappers and the command that does the work
	siteRedirect             // a redirection, with the statement it belongs to
	sitePipeline             // a pipeline as a whole, judged once at its outermost |
	siteFunction             // a function definition
	siteCode                 // code a command runs that is not shell on its command line: a download (bash <(curl …)), another language (python -c)
	siteCount
)

// siteNames name the sites in messages.
var siteNames = [siteCount]string{"command", "redirection", "pipeline", "function", "code"}

func (s site) String() string { return siteNames[s] }

// scope is what the walker knows about the command line when it reaches a
// site: where relative paths lead, which variables name scratch or loop
// over literal words, what was downloaded, which functions run their
// arguments. The maps are the walker's, shared for speed; rules only read
// them through scope's methods.
type scope struct {
	gate *Gate
	// cwd is where cd went: "" while in the starting directory, a path, or
	// "$DIR" when the walker cannot tell.
	cwd        string
	tempVars   map[string]bool     // variables holding a mktemp result
	assigned   map[string]bool     // scratch variables the command line sets itself
	loopVars   map[string][]string // for-loop variables over literal words
	downloaded map[string]bool     // files a downloader wrote earlier
	functions  map[string]bool     // functions that run their arguments as a command
}

// Invocation is one site of a command line as the rules see it,
// read-only: the command (a layer and the statement it runs in, nil for
// an exec'd argv), or the redirection, pipeline, function definition or
// code, with the scope in force there. The fields of the other sites are
// zero.
type Invocation struct {
	site site
	scope
	layer              // siteCommand: a wrapper, or the command that does the work
	stmt  *syntax.Stmt // the statement: the command's, or the redirection's
	feed  string       // text a literal echo or printf earlier in the pipeline feeds it (xargs's input)
	redir redirection  // siteRedirect
	pipe  pipelineView // sitePipeline
	fn    functionView // siteFunction
	code  codeView     // siteCode
}

// redirection is a redirection's site: its operator, its target, and for
// a process substitution the command whose output it feeds and the first
// command inside that runs code it reads (curl … > >(bash)).
type redirection struct {
	op       syntax.RedirOperator
	target   arg
	producer *layer // the statement's command, for > >(…)
	reader   *layer // the first command in > >(…) that runs what it reads
}

// writes reports whether the redirection opens its target for writing.
func (r redirection) writes() bool { return writesFile(r.op) }

// text is the redirection as reasons show it: "> /dev/sda".
func (r redirection) text() string { return r.op.String() + " " + r.target.text }

// pipelineView is a pipeline's site: the first downloader in it and the
// first later command that runs code it has not seen (both nil when there
// is none), the first SQL client, and the literal text of every stage (for
// SQL). The walker stops reading a pipeline at the runner, as the shell
// would already run the download there.
type pipelineView struct {
	fetcher, runner, sql *layer
	stages               []*syntax.Stmt
}

// functionView is a function definition's site: its name, how often its
// body starts it, and whether once in the background.
type functionView struct {
	name       string
	calls      int
	background bool
}

// codeView is a code site: the command that runs code it does not show
// on its command line (runner: "sh -c", "source", "pwsh"), what that code
// is, the command line, and whether the walker found the code comes
// straight from a downloader ($(curl …), <(curl …), a web request).
type codeView struct {
	runner, what, command string
	downloaded            bool
	// lang and text are code in another language (python -c, awk…),
	// its family and its literal text.
	lang, text string
}

// finding is a rule's match at a site: why, the text shown as the
// command (a command site's is its own text), and for a denial a form of
// the command that would be allowed, if any.
type finding struct {
	reason, command, hint string
	final                 bool // the walker reads the site no further
}

// found is a command check's match: why, and optionally a hint.
func found(reason string, hint ...string) (finding, bool) {
	f := finding{reason: reason}
	if len(hint) > 0 {
		f.hint = hint[0]
	}
	return f, true
}

// matched is a site check's match, read on after.
func matched(reason, command string) (finding, bool) {
	return finding{reason: reason, command: command}, true
}

// siteCheck judges one site that is not a command for one rule; ok
// reports a match.
type siteCheck func(c Invocation) (f finding, ok bool)

// scope is the walker's current knowledge, for the rules.
func (j *judge) scope() scope {
	return scope{gate: j.gate, cwd: j.cwd, tempVars: j.tempVars, assigned: j.assigned, loopVars: j.loopVars,
		downloaded: j.downloaded, functions: j.passArgs}
}

// invocation is the command site of one layer.
func (j *judge) invocation(l layer, stmt *syntax.Stmt) Invocation {
	c := Invocation{site: siteCommand, scope: j.scope(), layer: l, stmt: stmt}
	if stmt != nil {
		c.feed = j.pipedText[stmt]
	}
	return c
}

// runsDownload judges the code site of a command that runs code it has
// just downloaded.
func (j *judge) runsDownload(runner, what, command string) {
	j.applySite(Invocation{site: siteCode, scope: j.scope(),
		code: codeView{runner: runner, what: what, command: command, downloaded: true}})
}

// applySite runs the checks of the rules in force that judge this site,
// in the rule table's order, until a final finding. final reports one, or
// that judging has stopped.
func (j *judge) applySite(c Invocation) (final bool) {
	for _, r := range j.gate.sites[c.site] {
		if j.stopped() {
			return true
		}
		if f, ok := r.check(c); ok {
			j.rule(r.name, f.reason, f.command)
			if f.final {
				return true
			}
		}
	}
	return j.stopped()
}
