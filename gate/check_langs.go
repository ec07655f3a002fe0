package gate

import (
	"regexp"
	"strings"
	"sync"
)

// PowerShell, sed and remote-code runners: programs that run code the
// other checks do not parse.

// pwshInput says where pwsh (powershell) gets its code: standard input
// (-, -Command -, -File -, or neither a command nor a script), a value only
// known at run time or encoded (-EncodedCommand), or its command line.
// Its parameters are case-insensitive and may be abbreviated.
func pwshInput(args []arg) unseenCode {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a.dynamic {
			return expansion
		}
		t := strings.ToLower(a.text)
		next := func() unseenCode {
			switch {
			case i+1 >= len(args), args[i+1].is("-"):
				return otherStdin
			case args[i+1].dynamic:
				return expansion
			}
			return noUnseenCode
		}
		switch {
		case t == "-":
			return otherStdin
		case pwshParam(t, "command", 1), pwshParam(t, "file", 1):
			return next()
		case pwshParam(t, "encodedcommand", 1) || t == "-ec":
			return expansion
		case pwshParam(t, "executionpolicy", 2), pwshParam(t, "workingdirectory", 1), pwshParam(t, "configurationname", 4),
			pwshParam(t, "outputformat", 1), pwshParam(t, "inputformat", 2), pwshParam(t, "windowstyle", 1), pwshParam(t, "settingsfile", 2),
			pwshParam(t, "version", 1) && i+1 < len(args) && !strings.HasPrefix(args[i+1].text, "-"):
			i++
		case strings.HasPrefix(t, "-"):
		default:
			return noUnseenCode // a script file
		}
	}
	return otherStdin
}

// pwshParam reports a PowerShell parameter spelled with - or -- or /,
// abbreviated to at least min letters.
func pwshParam(t, name string, min int) bool {
	t = strings.TrimLeft(t, "-/")
	return len(t) >= min && strings.HasPrefix(name, t) && t != ""
}

// pwshDownload finds PowerShell that runs downloaded code: Invoke-
// Expression (iex) together with a download (Invoke-WebRequest, iwr, irm,
// curl/wget aliases, WebClient.DownloadString, Start-BitsTransfer).
func pwshDownload(code string) bool {
	lc := strings.ToLower(code)
	return langRes().pwshIex.MatchString(lc) && langRes().pwshFetch.MatchString(lc)
}

// checkPwsh judges the code pwsh -Command gives on its command line.
func (j *judge) checkPwsh(l layer) {
	args := l.args[1:]
	for i := 0; i+1 < len(args); i++ {
		t := strings.ToLower(args[i].text)
		if args[i].dynamic || !pwshParam(t, "command", 1) {
			continue
		}
		code := args[i+1:]
		var b strings.Builder
		for _, c := range code {
			if c.dynamic {
				j.dynamic(l.name+" runs code only known at run time", l.text())
				return
			}
			b.WriteString(c.text + " ")
		}
		if pwshDownload(b.String()) {
			j.runsDownload(l.name, "what it downloads (Invoke-Expression of a web request)", l.text())
		}
		return
	}
	if pwshInput(args) == expansion {
		j.dynamic(l.name+" runs code only known at run time or encoded", l.text())
	}
}

// checkSed judges sed's e command (run a command, or the pattern space,
// as shell code) and the s///e flag (run the result of the substitution):
// a literal command after e is judged as shell code; the pattern space or
// a substitution's result is only known at run time.
func (j *judge) checkSed(l layer) {
	opts, ops := scanOptions(l.args[1:], optionSpec{values: "efl", longValues: []string{"expression", "file", "line-length"}})
	var scripts []arg
	for _, o := range opts {
		if o.name == "-e" || o.name == "--expression" {
			scripts = append(scripts, o.value)
		}
	}
	if len(scripts) == 0 && len(values(opts, "-f", "--file")) == 0 && len(ops) > 0 {
		scripts = ops[:1]
	}
	for _, s := range scripts {
		if s.dynamic {
			if strings.Contains(s.text, "e") {
				j.dynamic("sed runs a script only known at run time, which may hold its e command", l.text())
			}
			continue
		}
		for _, cmd := range sedCommands(s.text) {
			switch {
			case cmd.exec != "":
				code := cmd.exec
				j.nested(func() { j.script(code) })
			case cmd.runsPattern:
				j.dynamic("sed's e runs the text it edits as a command", l.text())
			}
			if j.stopped() {
				return
			}
		}
	}
}

// sedCommand is what one sed command runs: a literal command (e CMD), or
// the pattern space or a substitution's result (e alone, s///e).
type sedCommand struct {
	exec        string
	runsPattern bool
}

// sedCommands finds the e commands and s///e flags of a sed script. It
// reads addresses, s commands with any delimiter and their flags, and
// the commands that take the rest of the line as text; a script it
// cannot read is taken to run its text (fail closed).
func sedCommands(script string) []sedCommand {
	var out []sedCommand
	s := script
	for len(s) > 0 {
		s = strings.TrimLeft(s, " \t\n;}")
		if s == "" {
			break
		}
		s = skipSedAddress(s)
		s = strings.TrimLeft(s, " \t!")
		if s == "" {
			break
		}
		c := s[0]
		s = s[1:]
		switch c {
		case '{':
		case 'e':
			line, rest, _ := strings.Cut(s, "\n")
			if cmd := strings.TrimSpace(line); cmd != "" {
				out = append(out, sedCommand{exec: cmd})
			} else {
				out = append(out, sedCommand{runsPattern: true})
			}
			s = rest
		case 's', 'y':
			rest, runs, ok := sedSubstitution(c, s)
			if !ok {
				return append(out, sedCommand{runsPattern: true})
			}
			if runs {
				out = append(out, sedCommand{runsPattern: true})
			}
			s = rest
		case 'a', 'i', 'c', 'r', 'R', 'w', 'W', 'b', 't', 'T', ':', '#', 'q', 'Q', 'l', 'L', 'v', 'F', 'z':
			s = skipSedArgument(c, s)
		}
	}
	return out
}

// sedSubstitution reads an s or y command after its letter: rest is the
// script after it, runs whether its e flag runs the result; ok is false
// when it cannot be read.
func sedSubstitution(c byte, s string) (rest string, runs, ok bool) {
	if s == "" {
		return "", false, false
	}
	delim := s[0]
	s = s[1:]
	for range 2 {
		end := sedDelimited(s, delim)
		if end < 0 {
			return "", false, false
		}
		s = s[end+1:]
	}
	flags := s
	if k := strings.IndexAny(flags, ";\n}"); k >= 0 {
		flags, s = flags[:k], flags[k:]
	} else {
		s = ""
	}
	if c != 's' {
		return s, false, true
	}
	if w := strings.Index(flags, "w"); w >= 0 {
		flags = flags[:w] // the rest is a file name
	}
	return s, strings.Contains(flags, "e"), true
}

// skipSedArgument skips what follows a command that takes the rest of the
// line (a, i, c, r, w…) or a label up to ; (b, t, q, l…).
func skipSedArgument(c byte, s string) string {
	_, rest, _ := strings.Cut(s, "\n")
	if c == 'b' || c == 't' || c == 'T' || c == 'q' || c == 'Q' || c == 'l' || c == 'L' {
		if k := strings.IndexAny(s, ";\n}"); k >= 0 {
			rest = s[k:]
		} else {
			rest = ""
		}
	}
	return rest
}

// skipSedAddress skips a sed address or range (1, $, /re/, \cREc, 1~2,
// addr,+N).
func skipSedAddress(s string) string {
	for range 2 {
		switch {
		case s == "":
			return s
		case s[0] == '/':
			if end := sedDelimited(s[1:], '/'); end >= 0 {
				s = strings.TrimLeft(s[end+2:], "IM")
			} else {
				return ""
			}
		case s[0] == '\\' && len(s) > 1:
			if end := sedDelimited(s[2:], s[1]); end >= 0 {
				s = strings.TrimLeft(s[end+3:], "IM")
			} else {
				return ""
			}
		default:
			s = strings.TrimLeft(s, "0123456789$~+")
		}
		if !strings.HasPrefix(s, ",") {
			return s
		}
		s = s[1:]
	}
	return s
}

// sedDelimited is the index of the first unescaped delim in s, or -1.
func sedDelimited(s string, delim byte) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case delim:
			return i
		}
	}
	return -1
}

// remoteCode says why a runtime runs code it fetches from the network
// itself: deno run/x/eval/test/serve/compile of a URL or an npm:/jsr:
// specifier, bun run of a URL, jbang of a URL. "" otherwise.
func remoteCode(l layer) string {
	remote := func(a arg) bool {
		t := strings.ToLower(a.text)
		return !a.dynamic && (strings.HasPrefix(t, "http://") || strings.HasPrefix(t, "https://") ||
			strings.HasPrefix(t, "npm:") || strings.HasPrefix(t, "jsr:"))
	}
	_, ops := scanOptions(l.args[1:], optionSpec{values: "c", longValues: []string{"config", "import-map", "cert", "location", "lock", "env-file"}})
	switch l.name {
	case "deno", "bun":
		if len(ops) > 1 && ops[0].is("run", "x", "test", "bench", "serve", "compile", "eval", "repl", "install", "upgrade") && remote(ops[1]) {
			return l.name + " " + ops[0].text + " fetches " + ops[1].text + " and runs it: code nobody has read"
		}
		if len(ops) > 0 && remote(ops[0]) {
			return l.name + " fetches " + ops[0].text + " and runs it: code nobody has read"
		}
	case "jbang":
		for _, a := range ops {
			if remote(a) {
				return "jbang fetches " + a.text + " and runs it: code nobody has read"
			}
		}
	}
	return ""
}

// forkBomb reports code that forks in a loop with no end: fork (os.fork,
// Process.fork, pcntl_fork, child_process.fork) inside while 1/true,
// loop, for(;;), a statement-modifier loop (fork while 1) or an endless
// iterator.
func forkBomb(code string) bool {
	r := langRes()
	return r.forkCall.MatchString(code) && r.endless.MatchString(code)
}

// startsItselfEndlessly is fork-bomb's function site: a function that
// starts itself more than once, or in the background (:(){ :|:& };:).
func startsItselfEndlessly(c Invocation) (finding, bool) {
	f := c.fn
	if f.calls < 2 && !f.background {
		return finding{}, false
	}
	how := "more than once"
	if f.background {
		how = "in the background"
	}
	return matched("function "+f.name+" starts itself "+how+", without end", f.name+"()")
}

type langRegexps struct {
	pwshIex, pwshFetch, forkCall, endless *regexp.Regexp
}

// langRes are compiled on first use, as codeRes are.
var langRes = sync.OnceValue(func() langRegexps {
	return langRegexps{
		pwshIex:   regexp.MustCompile(`\biex\b|invoke-expression|\.invoke\(|\[scriptblock\]::create`),
		pwshFetch: regexp.MustCompile(`\biwr\b|\birm\b|invoke-webrequest|invoke-restmethod|downloadstring|downloadfile|net\.webclient|start-bitstransfer|\bcurl\b|\bwget\b|https?://`),
		forkCall:  regexp.MustCompile(`\bfork\b|pcntl_fork`),
		endless: regexp.MustCompile(`(?i)while\s*\(?\s*(1|true|fork\b[^)]*)\s*\)?|\bfork\s+(while|until|for)\b|\bloop\s*(\{|do\b)|` +
			`for\s*\(\s*;\s*;\s*\)|iter\s*\(\s*int\s*,|itertools\.count|until\s+(0|false)\b|\.times\b.*\bfork|while\s*:`),
	}
})
