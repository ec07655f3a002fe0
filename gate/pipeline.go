package gate

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// downloads reports whether a word's substitutions run a downloader
// (curl, wget, …), wherever they are nested.
func (j *judge) downloads(w *syntax.Word) bool {
	if w == nil {
		return false
	}
	found := false
	syntax.Walk(w, func(n syntax.Node) bool {
		if found || n == nil || !j.tick() {
			return !found && n == nil
		}
		if call, ok := n.(*syntax.CallExpr); ok && isDownloader(j.finalLayer(call).name) {
			found = true
		}
		return !found
	})
	return found
}

// isDownloader reports a program whose output is what it reads from the
// network: downloaders, text browsers' dumps, raw socket tools (nc, socat,
// telnet, openssl s_client), file transfer (ftp, scp, sftp) and a remote
// shell's output (ssh host cat x). What they print is code nobody has read
// when a shell or interpreter runs it.
func isDownloader(name string) bool {
	switch name {
	case "curl", "wget", "wget2", "fetch", "aria2c", "http", "https", "xh", "xhs", "lwp-request", "lwp-download",
		"lynx", "links", "links2", "elinks", "w3m", "nc", "ncat", "netcat", "nc.openbsd", "nc.traditional", "socat",
		"telnet", "openssl", "ftp", "tftp", "lftp", "sftp", "scp", "ssh", "rsync", "smbclient", "gsutil", "s3cmd":
		return true
	}
	return false
}

// finalLayer is the command a simple command runs once its wrappers are
// looked through.
func (j *judge) finalLayer(call *syntax.CallExpr) layer {
	if l, ok := j.finals[call]; ok {
		return l
	}
	l := layer{args: []arg{{text: "", dynamic: true}}}
	if len(call.Args) > 0 {
		if args := words(call.Args); len(args) > 0 {
			layers, _ := resolveLayers(args)
			l = layers[len(layers)-1]
		}
	}
	j.finals[call] = l
	return l
}

// unseenCode says where a command gets code the gate cannot read from
// its command line.
type unseenCode int

const (
	noUnseenCode unseenCode = iota
	shellStdin              // a shell reading its commands from standard input
	otherStdin              // an interpreter reading code from standard input
	expansion               // code or a script path only known at run time
)

func runsUnseenCode(l layer) unseenCode {
	if l.dynamic() || l.wrapper {
		return noUnseenCode
	}
	fam := family(l.name)
	if unseen, ok := unseenCodeOf[fam]; ok {
		return unseen(fam, l.args[1:])
	}
	return noUnseenCode
}

// unseenCodeOf says, per family, where a command gets code the gate
// cannot read from its command line.
var unseenCodeOf = map[string]func(fam string, args []arg) unseenCode{
	"sh": shellUnseenCode, "python": interpreterUnseenCode, "perl": interpreterUnseenCode, "ruby": interpreterUnseenCode,
	"node": interpreterUnseenCode, "php": interpreterUnseenCode, "lua": interpreterUnseenCode, "rscript": interpreterUnseenCode,
	"r": interpreterUnseenCode, "julia": interpreterUnseenCode,
	"pwsh": func(_ string, args []arg) unseenCode { return pwshInput(args) },
	"awk":  awkUnseenCode, "eval": evalUnseenCode, "source": sourceUnseenCode, "at": atUnseenCode,
}

func shellUnseenCode(_ string, args []arg) unseenCode {
	sc := parseShell(args)
	switch {
	case sc.stdin:
		return shellStdin
	case sc.code != nil && sc.code.dynamic, sc.script != nil && sc.script.dynamic:
		return expansion
	}
	return noUnseenCode
}

func interpreterUnseenCode(fam string, args []arg) unseenCode {
	ic := parseInterpreter(fam, args)
	if ic.module != nil {
		return noUnseenCode
	}
	for _, c := range append(ic.code, derefs(ic.script)...) {
		if c.dynamic {
			return expansion
		}
	}
	if ic.stdin {
		return otherStdin
	}
	return noUnseenCode
}

func awkUnseenCode(_ string, args []arg) unseenCode {
	opts, _ := scanOptions(args, optionSpec{values: "fvF", longValues: []string{"file"}})
	for _, f := range values(opts, "-f", "--file") {
		if f.dynamic {
			return expansion
		}
		if isStdinPath(f) {
			return otherStdin
		}
	}
	return noUnseenCode
}

func evalUnseenCode(_ string, args []arg) unseenCode {
	for _, a := range args {
		if a.dynamic {
			return expansion
		}
	}
	return noUnseenCode
}

func sourceUnseenCode(_ string, args []arg) unseenCode {
	switch {
	case len(args) > 0 && isStdinPath(args[0]):
		return shellStdin
	case len(args) > 0 && args[0].dynamic:
		return expansion
	}
	return noUnseenCode
}

func atUnseenCode(_ string, args []arg) unseenCode {
	if opts, _ := scanOptions(args, optionSpec{values: "qfMmt"}); !has(opts, "-l", "-r", "-d", "-c", "-V", "-f") {
		return shellStdin
	}
	return noUnseenCode
}

// pipeline judges a whole pipeline once, at its outermost |: a shell
// reading its commands from the pipe runs what the stage before it prints
// (judged when that is echo or printf of literal text, dynamic
// otherwise). The walker reads the stages up to the first that runs code
// it has not seen after a download (download-exec's), and then judges the
// pipeline site.
func (j *judge) pipeline(b *syntax.BinaryCmd) {
	if b.Op != syntax.Pipe && b.Op != syntax.PipeAll || j.pipes[b] {
		return
	}
	stages := j.stages(b)
	j.notePiped(stages)
	j.findIntoXargs(stages)
	v := pipelineView{stages: stages}
	for i, st := range stages {
		reader := j.scanStage(st, &v)
		if v.runner != nil {
			break
		}
		if reader != nil && i > 0 {
			lang := family(reader.name)
			if runsUnseenCode(*reader) == shellStdin {
				lang = "sh"
			}
			j.printedCode(stages[:i], *reader, lang)
		}
		if j.stopped() {
			return
		}
	}
	j.applySite(Invocation{site: sitePipeline, scope: j.scope(), pipe: v})
}

// scanStage notes, in one stage, the first downloader, the first later
// command that runs unseen code and the first SQL client of the pipeline,
// and returns the stage's first command that reads code from its input.
func (j *judge) scanStage(st *syntax.Stmt, v *pipelineView) (reader *layer) {
	syntax.Walk(st, func(n syntax.Node) bool {
		if n == nil || !j.tick() {
			return n == nil
		}
		call, ok := n.(*syntax.CallExpr)
		if !ok {
			return true
		}
		l := j.finalLayer(call)
		kind := runsUnseenCode(l)
		switch {
		case v.fetcher != nil && v.runner == nil && kind != noUnseenCode:
			v.runner = &l
		case isDownloader(l.name) && v.fetcher == nil:
			v.fetcher = &l
		case family(l.name) == "sql" && v.sql == nil:
			v.sql = &l
		}
		if (kind == shellStdin || kind == otherStdin) && reader == nil {
			reader = &l
		}
		return true
	})
	return reader
}

// downloadPipedToRunner is download-exec's pipeline site: a downloader
// feeding a later stage that runs unseen code.
func downloadPipedToRunner(c Invocation) (finding, bool) {
	p := c.pipe
	if p.runner == nil {
		return finding{}, false
	}
	return matched("a download is piped into "+p.runner.name+", which runs it", p.fetcher.text()+" | "+p.runner.text())
}

// downloadRun is download-exec's code site: code that comes straight
// from a downloader ($(curl …), <(curl …), a web request).
func downloadRun(c Invocation) (finding, bool) {
	if !c.code.downloaded {
		return finding{}, false
	}
	return matched(c.code.runner+" runs "+c.code.what, c.code.command)
}

// downloadIntoShell is download-exec's redirection site: a download fed
// through a process substitution to code that runs it (curl … > >(bash)).
func downloadIntoShell(c Invocation) (finding, bool) {
	r := c.redir
	if r.reader == nil {
		return finding{}, false
	}
	return matched("a download is fed into "+r.reader.name+", which runs it", r.producer.text()+" > >("+r.reader.text()+")")
}

// findIntoXargs judges find … | xargs CMD as find -exec CMD {} +: the
// command runs on what find prints, every file of the tree unless a test
// narrows it (find /data | xargs chown u changes all of /data).
func (j *judge) findIntoXargs(stages []*syntax.Stmt) {
	for i := 1; i < len(stages) && !j.stopped(); i++ {
		prev, ok1 := stages[i-1].Cmd.(*syntax.CallExpr)
		cur, ok2 := stages[i].Cmd.(*syntax.CallExpr)
		if !ok1 || !ok2 || len(prev.Args) == 0 || len(cur.Args) == 0 {
			continue
		}
		fl := j.finalLayer(prev)
		if fl.dynamic() || fl.name != "find" {
			continue
		}
		layers, _ := resolveLayers(words(cur.Args))
		for _, l := range layers {
			if l.name != "xargs" || l.dynamic() {
				continue
			}
			cmd := xargsCommand(l.args[1:])
			for k, a := range cmd {
				if a.implicit {
					cmd[k] = literal("{}")
				}
			}
			f := parseFind(fl.args[1:])
			j.runOnFound(cmd, j.scope().found(f, len(f.expr)), f.starts)
			break
		}
	}
}

// notePiped notes, for each stage after an echo or printf of literal
// text, the words that text splits into: what xargs there appends.
func (j *judge) notePiped(stages []*syntax.Stmt) {
	for i := 1; i < len(stages); i++ {
		prev, ok := stages[i-1].Cmd.(*syntax.CallExpr)
		if !ok || len(prev.Args) == 0 || len(stages[i-1].Redirs) > 0 {
			continue
		}
		l := j.finalLayer(prev)
		if l.name != "echo" && l.name != "printf" {
			continue
		}
		text, known := printedText(l)
		// xargs reads quotes and backslashes its own way, and printf's
		// format would need applying: leave those only known at run time.
		if !known || strings.ContainsAny(text, `"'\%`) {
			continue
		}
		if j.piped == nil {
			j.piped = map[*syntax.Stmt][]string{}
		}
		j.piped[stages[i]] = strings.Fields(text)
		if j.pipedText == nil {
			j.pipedText = map[*syntax.Stmt]string{}
		}
		j.pipedText[stages[i]] = text
	}
}

// printedText is roughly what echo or printf prints: escapes decoded,
// printf's format and arguments on separate lines. ok is false when it
// depends on values only known at run time.
func printedText(l layer) (string, bool) {
	args := l.args[1:]
	decode := l.name == "printf"
	if l.name == "echo" {
		for len(args) > 0 && !args[0].dynamic && len(args[0].text) > 1 && strings.Trim(args[0].text, "-neE") == "" && args[0].text[0] == '-' {
			decode = decode || strings.Contains(args[0].text, "e")
			args = args[1:]
		}
	}
	var parts []string
	for _, a := range args {
		if a.dynamic {
			return "", false
		}
		text := a.text
		if decode {
			text = decodeANSIC(text)
		}
		parts = append(parts, text)
	}
	sep := " "
	if l.name == "printf" {
		sep = "\n"
	}
	return strings.Join(parts, sep), true
}

// stages flattens a pipeline into its stages, marking the inner | nodes as
// judged.
func (j *judge) stages(b *syntax.BinaryCmd) []*syntax.Stmt {
	var out []*syntax.Stmt
	var add func(s *syntax.Stmt)
	add = func(s *syntax.Stmt) {
		if inner, ok := s.Cmd.(*syntax.BinaryCmd); ok && (inner.Op == syntax.Pipe || inner.Op == syntax.PipeAll) && !j.pipes[inner] {
			j.pipes[inner] = true
			add(inner.X)
			add(inner.Y)
			return
		}
		out = append(out, s)
	}
	j.pipes[b] = true
	add(b.X)
	add(b.Y)
	return out
}

// literalText joins the literal text under a node (arguments, quoted
// strings, here-documents), for scanning it for SQL.
func literalText(n syntax.Node) string {
	var b strings.Builder
	syntax.Walk(n, func(n syntax.Node) bool {
		switch p := n.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
			b.WriteByte(' ')
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
			b.WriteByte(' ')
		}
		return true
	})
	return b.String()
}
