package gate

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// layer is one level of a command line: a wrapper that runs another
// command (sudo, env, nice…) or, last, the command that does the work.
type layer struct {
	name    string // argv0's base name in lower case; "" when it is dynamic
	args    []arg  // the argv, argv0 included
	wrapper bool   // it runs a further command (which may be missing)
	env     []arg  // NAME=value operands the wrapper sets (env, sudo)
}

// dynamic reports whether the command's name is only known at run time
// (a variable, a substitution, a glob).
func (l layer) dynamic() bool { return l.args[0].dynamic || l.args[0].glob }

// text is the normalised command: its name and arguments joined by single spaces.
func (l layer) text() string {
	var b strings.Builder
	if l.dynamic() {
		b.WriteString(l.args[0].text)
	} else {
		b.WriteString(l.name)
	}
	for _, a := range l.args[1:] {
		if !a.implicit {
			b.WriteByte(' ')
			b.WriteString(a.text)
		}
	}
	return b.String()
}

// commandName is argv0 without its directory, in lower case: /bin/rm and
// ./rm are rm (a copy or link of a tool acts as the tool), and RM is rm
// (macOS file systems ignore case).
func commandName(argv0 string) string {
	if i := strings.LastIndexByte(argv0, '/'); i >= 0 && i < len(argv0)-1 {
		argv0 = argv0[i+1:]
	}
	return strings.ToLower(argv0)
}

// maxLayers bounds how many wrappers are looked through (nice nice nice …).
const maxLayers = 32

// resolveLayers looks through the wrappers in front of a command. The
// last layer is the command that does the work, or a wrapper that runs
// none (sudo -l, env). truncated is true when it gave up after maxLayers.
func resolveLayers(args []arg) (layers []layer, truncated bool) {
	for len(args) > 0 {
		if len(layers) == maxLayers {
			return layers, true
		}
		l := layer{args: args}
		if l.dynamic() {
			return append(layers, l), false
		}
		l.name = commandName(args[0].text)
		s, ok := unwrap(l.name, args[1:])
		if !ok {
			return append(layers, l), false
		}
		l.wrapper, l.env = true, s.env
		layers = append(layers, l)
		if s.code != nil {
			args = shellArgv(*s.code)
		} else {
			args = s.next
		}
	}
	return layers, false
}

// shellArgv is the argv of a shell running code: what su -c, watch,
// flock -c, script -c, env -S and parallel amount to.
func shellArgv(code arg) []arg {
	return []arg{literal("sh"), literal("-c"), code}
}

// step is what a wrapper runs: the next argv (nil for none) or shell code.
type step struct {
	next []arg
	code *arg
	env  []arg
}

// unwrap recognises a wrapper and finds the command it runs; ok is false
// when name is not a wrapper.
func unwrap(name string, rest []arg) (s step, ok bool) {
	w, ok := wrappers[name]
	if !ok {
		return step{}, false
	}
	return w(rest), true
}

// wrappers finds, per wrapper, what it runs given its arguments.
var wrappers = map[string]func(rest []arg) step{
	"sudo":   unwrapSudo,
	"doas":   afterOptions(optionSpec{values: "uC", posix: true}),
	"pkexec": afterOptions(optionSpec{posix: true, longValues: []string{"user"}}),
	"run0": afterOptions(optionSpec{values: "ugD", posix: true, longValues: []string{
		"user", "group", "chdir", "nice", "setenv", "unit", "property", "description", "slice", "machine", "background"}}),
	"sudo-rs": unwrapSudo,
	"gksudo":  unwrapFrontEnd, "gksu": unwrapFrontEnd, "kdesu": unwrapFrontEnd, "kdesudo": unwrapFrontEnd,
	"beesu": unwrapFrontEnd, "lxqt-sudo": unwrapFrontEnd, "lxsudo": unwrapFrontEnd, "pfexec": unwrapFrontEnd,
	"ksu": unwrapFrontEnd, "calife": unwrapFrontEnd, "super": unwrapFrontEnd,
	"xdg-su": unwrapFrontEnd, "gnomesu": unwrapFrontEnd,
	"su":       unwrapSu,
	"runuser":  unwrapSu,
	"env":      unwrapEnv,
	"nice":     afterOptions(optionSpec{values: "n", posix: true, longValues: []string{"adjustment"}}),
	"nohup":    afterOptions(optionSpec{posix: true}),
	"setsid":   afterOptions(optionSpec{posix: true}),
	"unbuffer": afterOptions(optionSpec{posix: true}),
	"builtin":  afterOptions(optionSpec{posix: true}),
	"timeout":  unwrapTimeout,
	"time":     afterOptions(optionSpec{values: "fo", posix: true, longValues: []string{"format", "output"}}),
	"stdbuf":   afterOptions(optionSpec{values: "ioe", posix: true, longValues: []string{"input", "output", "error"}}),
	"ionice":   unwrapIonice,
	"chrt":     unwrapChrt,
	"taskset":  unwrapTaskset,
	"xargs":    func(rest []arg) step { return step{next: xargsCommand(rest)} },
	"command":  unwrapCommand,
	"exec":     afterOptions(optionSpec{values: "a", posix: true}),
	"busybox":  afterOptions(optionSpec{posix: true}),
	"watch":    unwrapWatch,
	"flock":    unwrapFlock,
	"script":   unwrapScript,
	"parallel": unwrapParallel,
	"unshare": afterOptions(optionSpec{values: "SGRw", attached: "mupinUCTt", posix: true, longValues: []string{
		"setuid", "setgid", "map-user", "map-group", "map-users", "map-groups", "propagation", "setgroups", "wd", "root", "load-interp", "monotonic", "boottime"}}),
	"chroot": func(rest []arg) step {
		_, ops := scanOptions(rest, optionSpec{posix: true, longValues: []string{"userspec", "groups"}})
		return step{next: after(ops, 1)}
	},
	"systemd-run": afterOptions(optionSpec{values: "upEMHd", posix: true, longValues: []string{
		"unit", "property", "setenv", "machine", "host", "uid", "gid", "nice", "working-directory", "slice", "description",
		"service-type", "on-active", "on-boot", "on-startup", "on-unit-active", "on-unit-inactive", "on-calendar", "on-clock-change",
		"on-timezone-change", "timer-property", "path-property", "socket-property", "expand-environment", "background", "json"}}),
	"nsenter": afterOptions(optionSpec{values: "tSGe", attached: "wrmuinpUCTa", posix: true, longValues: []string{"target", "setuid", "setgid", "env"}}),
	"strace":  unwrapTracer,
	"ltrace":  unwrapTracer,
	"xvfb-run": afterOptions(optionSpec{values: "nsfep", posix: true, longValues: []string{
		"server-num", "server-args", "auth-file", "error-file", "xauth-protocol"}}),
	"dbus-run-session": afterOptions(optionSpec{posix: true, longValues: []string{"config-file", "dbus-daemon"}}),
	"systemd-inhibit":  afterOptions(optionSpec{posix: true, longValues: []string{"what", "who", "why", "mode"}}),
	"numactl":          afterOptions(optionSpec{values: "CNmipPw", posix: true, longValues: []string{"physcpubind", "cpunodebind", "membind", "interleave", "preferred", "preferred-many", "weighted-interleave"}}),
	"cgexec":           afterOptions(optionSpec{values: "g", posix: true}),
	"caffeinate":       afterOptions(optionSpec{values: "tw", posix: true}),
	"faketime": func(rest []arg) step {
		_, ops := scanOptions(rest, optionSpec{values: "mf", posix: true})
		return step{next: after(ops, 1)}
	},
	"firejail":     afterOptions(optionSpec{posix: true}),
	"proxychains":  afterOptions(optionSpec{values: "f", posix: true}),
	"proxychains4": afterOptions(optionSpec{values: "f", posix: true}),
	"torsocks":     afterOptions(optionSpec{values: "aPiuw", posix: true}),
	"ssh-agent":    afterOptions(optionSpec{values: "aEPt", posix: true}),
	"setpriv":      afterOptions(optionSpec{posix: true}),
	"direnv":       unwrapSubcommand([]string{"exec"}, 1, optionSpec{posix: true}),
	"uv": unwrapSubcommand([]string{"run"}, 0, optionSpec{values: "pw", posix: true, longValues: []string{
		"with", "with-requirements", "with-editable", "python", "project", "directory", "package", "extra", "group",
		"env-file", "index", "index-url", "extra-index-url", "only-group", "no-group", "script", "module"}}),
	"poetry":     unwrapSubcommand([]string{"run"}, 0, optionSpec{values: "P", posix: true, longValues: []string{"directory", "project"}}),
	"pipenv":     unwrapSubcommand([]string{"run"}, 0, optionSpec{posix: true}),
	"pdm":        unwrapSubcommand([]string{"run"}, 0, optionSpec{values: "p", posix: true, longValues: []string{"project", "venv"}}),
	"rye":        unwrapSubcommand([]string{"run"}, 0, optionSpec{posix: true, longValues: []string{"pyproject"}}),
	"hatch":      unwrapSubcommand([]string{"run"}, 0, optionSpec{values: "e", posix: true, longValues: []string{"env"}}),
	"bundle":     unwrapSubcommand([]string{"exec"}, 0, optionSpec{posix: true, longValues: []string{"gemfile"}}),
	"conda":      unwrapSubcommand([]string{"run"}, 0, optionSpec{values: "np", posix: true, longValues: []string{"name", "prefix", "cwd"}}),
	"mamba":      unwrapSubcommand([]string{"run"}, 0, optionSpec{values: "np", posix: true, longValues: []string{"name", "prefix", "cwd"}}),
	"micromamba": unwrapSubcommand([]string{"run"}, 0, optionSpec{values: "np", posix: true, longValues: []string{"name", "prefix", "cwd"}}),
	// Edits files; it runs no command. Listed so that the sudo rule sees it.
	"sudoedit": func([]arg) step { return step{} },
}

// privilegeFrontEnds are the graphical and other front-ends to sudo and su
// (the sudo rule names them): each runs its command with another user's
// privileges. (please is left out: it is also a build system.)
var privilegeFrontEnds = []string{"gksudo", "gksu", "kdesu", "kdesudo", "beesu", "lxqt-sudo", "lxsudo", "pfexec",
	"sudo-rs", "ksu", "calife", "super", "xdg-su", "gnomesu"}

// unwrapFrontEnd: a sudo front-end runs the code of -c, or its operands
// (gksu 'ls -l' is one word of shell code).
func unwrapFrontEnd(rest []arg) (s step) {
	opts, ops := scanOptions(rest, optionSpec{values: "cuDmkt", posix: true, longValues: []string{"user", "command", "description", "message"}})
	if code := values(opts, "-c", "--command"); len(code) > 0 {
		s.code = &code[len(code)-1]
		return s
	}
	if len(ops) == 1 && !ops[0].dynamic && strings.ContainsAny(ops[0].text, " \t;|&") {
		s.code = &ops[0]
		return s
	}
	s.next = ops
	return s
}

// unwrapTracer: strace and ltrace run their operands unless -p attaches
// them to a running process.
func unwrapTracer(rest []arg) (s step) {
	opts, ops := scanOptions(rest, optionSpec{values: "eoOpPsSuEIbXaUA", posix: true, longValues: []string{"output", "attach", "user", "env", "trace"}})
	if !has(opts, "-p", "--attach") {
		s.next = ops
	}
	return s
}

// unwrapSubcommand is a tool one of whose subcommands (uv run, bundle
// exec, conda run) runs a command: the operands after the subcommand and
// skip more words (direnv exec DIR), its options (spec) skipped. Other
// subcommands run nothing: the tool's own checks judge them.
func unwrapSubcommand(verbs []string, skip int, spec optionSpec) func(rest []arg) step {
	return func(rest []arg) step {
		verb, after0 := firstOperand(rest, nil)
		if verb == nil || verb.dynamic || !slices.Contains(verbs, verb.text) {
			return step{}
		}
		_, ops := scanOptions(after0, spec)
		return step{next: after(ops, skip)}
	}
}

// afterOptions is a wrapper that runs its operands, its options (spec)
// skipped.
func afterOptions(spec optionSpec) func(rest []arg) step {
	return func(rest []arg) step {
		_, next := scanOptions(rest, spec)
		return step{next: next}
	}
}

// unwrapSudo: sudo runs its operands after NAME=value ones, unless an
// option makes it edit, list, validate or print.
func unwrapSudo(rest []arg) (s step) {
	opts, ops := scanOptions(rest, optionSpec{values: "ugCDhprtTU", posix: true, longValues: []string{
		"user", "group", "close-from", "chdir", "host", "prompt", "role", "type", "command-timeout", "other-user"}})
	if has(opts, "-e", "--edit", "-l", "--list", "-v", "--validate", "-k", "-K", "--reset-timestamp", "--remove-timestamp", "-V", "--version", "--help") {
		return step{}
	}
	s.env, s.next = splitAssignments(ops)
	return s
}

// unwrapSu: su and runuser run the shell code of -c (the last one).
func unwrapSu(rest []arg) (s step) {
	opts, _ := scanOptions(rest, optionSpec{values: "cgGsw", longValues: []string{
		"command", "session-command", "group", "supp-group", "shell", "whitelist-environment"}})
	if code := values(opts, "-c", "--command", "--session-command"); len(code) > 0 {
		s.code = &code[len(code)-1]
	}
	return s
}

// unwrapEnv: env runs its operands after NAME=value ones, or with -S the
// string split like shell words.
func unwrapEnv(rest []arg) (s step) {
	opts, ops := scanOptions(rest, optionSpec{values: "uCSPa", posix: true, longValues: []string{
		"unset", "chdir", "split-string", "argv0"}})
	if len(ops) > 0 && ops[0].is("-") {
		ops = ops[1:] // env - is env -i
	}
	s.env, s.next = splitAssignments(ops)
	if split := values(opts, "-S", "--split-string"); len(split) > 0 {
		code := splitStringCode(split[len(split)-1], s.next)
		s.code, s.next = &code, nil
	}
	return s
}

// unwrapTimeout: timeout runs what follows its duration.
func unwrapTimeout(rest []arg) step {
	_, ops := scanOptions(rest, optionSpec{values: "sk", posix: true, longValues: []string{"signal", "kill-after"}})
	return step{next: after(ops, 1)}
}

// unwrapIonice: ionice runs its operands unless it changes a running process.
func unwrapIonice(rest []arg) (s step) {
	opts, ops := scanOptions(rest, optionSpec{values: "cnpPu", posix: true, longValues: []string{"class", "classdata", "pid", "pgid", "uid"}})
	if !has(opts, "-p", "-P", "-u", "--pid", "--pgid", "--uid") {
		s.next = ops
	}
	return s
}

// unwrapChrt: chrt runs what follows its priority unless it changes a
// running process or prints the range.
func unwrapChrt(rest []arg) (s step) {
	opts, ops := scanOptions(rest, optionSpec{values: "TPD", posix: true, longValues: []string{"sched-runtime", "sched-period", "sched-deadline"}})
	if !has(opts, "-p", "--pid", "-m", "--max") {
		s.next = after(ops, 1)
	}
	return s
}

// unwrapTaskset: taskset runs what follows its mask unless it changes a
// running process.
func unwrapTaskset(rest []arg) (s step) {
	opts, ops := scanOptions(rest, optionSpec{posix: true})
	if !has(opts, "-p", "--pid") {
		s.next = after(ops, 1)
	}
	return s
}

// unwrapCommand: command runs its operands unless -v or -V only describes them.
func unwrapCommand(rest []arg) (s step) {
	opts, ops := scanOptions(rest, optionSpec{posix: true})
	if !has(opts, "-v", "-V") {
		s.next = ops
	}
	return s
}

// unwrapWatch: watch runs its operands joined as shell code, or with -x
// as an argv.
func unwrapWatch(rest []arg) (s step) {
	opts, ops := scanOptions(rest, optionSpec{values: "nq", attached: "d", posix: true, longValues: []string{"interval", "equexit"}})
	if has(opts, "-x", "--exec") {
		s.next = ops
	} else if len(ops) > 0 {
		code := joinCode(ops)
		s.code = &code
	}
	return s
}

// unwrapFlock: flock FILE runs -c's shell code or the argv after the file.
func unwrapFlock(rest []arg) (s step) {
	_, ops := scanOptions(rest, optionSpec{values: "Ew", posix: true, longValues: []string{"conflict-exit-code", "wait", "timeout"}})
	switch {
	case len(ops) >= 3 && ops[1].is("-c", "--command"):
		s.code = &ops[2]
	case len(ops) >= 2:
		s.next = ops[1:]
	}
	return s
}

// unwrapScript: script runs the shell code of -c (the last one).
func unwrapScript(rest []arg) (s step) {
	opts, _ := scanOptions(rest, optionSpec{values: "cEIOBTmo", attached: "t", longValues: []string{
		"command", "echo", "log-in", "log-out", "log-io", "log-timing", "logging-format", "output-limit"}})
	if code := values(opts, "-c", "--command"); len(code) > 0 {
		s.code = &code[len(code)-1]
	}
	return s
}

// unwrapParallel: parallel runs its command template as shell code.
func unwrapParallel(rest []arg) (s step) {
	if code, ok := parallelCode(rest); ok {
		s.code = &code
	}
	return s
}

// after drops the first n operands (timeout's duration, taskset's mask).
func after(ops []arg, n int) []arg {
	if len(ops) <= n {
		return nil
	}
	return ops[n:]
}

// splitAssignments separates leading NAME=value operands (env, sudo) from
// the command that follows them.
func splitAssignments(ops []arg) (env, rest []arg) {
	for i, a := range ops {
		text := a.text
		if a.dynamic {
			text = a.prefix // PATH="$PATH": its literal start holds the name
		}
		name, _, ok := strings.Cut(text, "=")
		if !ok || name == "" || strings.ContainsAny(name, "/ \"'$") {
			return ops[:i], ops[i:]
		}
	}
	return ops, nil
}

// xargsCommand is the command xargs runs. Its input arrives at run time:
// it replaces the -I/-i string or is appended as an implicit argument.
func xargsCommand(rest []arg) []arg {
	opts, ops := scanOptions(rest, optionSpec{values: "adEILnPsJR", attached: "eil", posix: true, longValues: []string{
		"arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"}})
	if len(ops) == 0 {
		return nil // xargs alone runs echo
	}
	replace := ""
	for _, o := range opts {
		switch o.name {
		case "-I", "-J":
			replace = o.value.text
		case "-i", "--replace":
			replace = "{}"
			if o.hasValue && o.value.text != "" {
				replace = o.value.text
			}
		}
	}
	out := make([]arg, 0, len(ops)+1)
	for _, a := range ops {
		if replace != "" && strings.Contains(a.text, replace) {
			a = arg{text: a.text, dynamic: true, word: a.word}
		}
		out = append(out, a)
	}
	if replace == "" {
		out = append(out, arg{text: "{xargs input}", dynamic: true, implicit: true})
	}
	return out
}

// withParallelInput runs, for GNU parallel with no template and no :::
// inputs, each line a literal echo or printf before it prints as the
// command it is (echo ok | parallel runs ok).
func withParallelInput(layers []layer, text string) []layer {
	for i := 0; i+1 < len(layers); i++ {
		next := layers[i+1]
		if layers[i].name == "parallel" && len(next.args) == 3 && next.args[2].dynamic && next.args[2].text == parallelInput && text != "" {
			out := append([]layer{}, layers[:i+1]...)
			return append(out, layer{name: "sh", args: shellArgv(literal(text))})
		}
	}
	return layers
}

// withXargsInput puts the words xargs reads in place of its input when
// they are known (echo ok | xargs rm -f x). It only does so when xargs
// splits its input at blanks (no -0, -d, -a, -E, -L, -I, -J).
func withXargsInput(layers []layer, input []string) []layer {
	i := slices.IndexFunc(layers, func(l layer) bool { return l.name == "xargs" && !l.dynamic() })
	if i < 0 {
		return layers
	}
	opts, _ := scanOptions(layers[i].args[1:], optionSpec{values: "adEILnPsJR", attached: "eil", posix: true, longValues: []string{
		"arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"}})
	if has(opts, "-0", "--null", "-d", "--delimiter", "-a", "--arg-file", "-E", "-e", "--eof", "-L", "-l", "--max-lines", "-I", "-i", "--replace", "-J") {
		return layers
	}
	out := slices.Clone(layers)
	for k := i + 1; k < len(out); k++ {
		var args []arg
		for _, a := range out[k].args {
			if !a.implicit {
				args = append(args, a)
				continue
			}
			for _, w := range input {
				args = append(args, literal(w))
			}
		}
		out[k].args = args
	}
	return out
}

// withXargsLine runs xargs -I (-i, --replace) once with the one line a
// literal echo or printf before it prints put in place of the
// replacement string (echo 'git push' | xargs -I{} sh -c '{}' runs
// sh -c 'git push'). Other input, or more than one line, is left as it
// is: only known at run time.
func withXargsLine(layers []layer, text string) []layer {
	i := slices.IndexFunc(layers, func(l layer) bool { return l.name == "xargs" && !l.dynamic() })
	lines := strings.FieldsFunc(text, func(r rune) bool { return r == '\n' })
	if i < 0 || len(lines) != 1 || strings.TrimSpace(lines[0]) == "" {
		return layers
	}
	opts, ops := scanOptions(layers[i].args[1:], optionSpec{values: "adEILnPsJR", attached: "eil", posix: true, longValues: []string{
		"arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"}})
	if has(opts, "-0", "--null", "-d", "--delimiter", "-a", "--arg-file") {
		return layers
	}
	replace := ""
	for _, o := range opts {
		switch o.name {
		case "-I":
			replace = o.value.text
		case "-i", "--replace":
			replace = "{}"
			if o.hasValue && o.value.text != "" {
				replace = o.value.text
			}
		}
	}
	if replace == "" || len(ops) == 0 {
		return layers
	}
	// xargs -I trims leading blanks from the line.
	line := strings.TrimLeft(lines[0], " \t")
	cmd := make([]arg, len(ops))
	for k, a := range ops {
		cmd[k] = a
		if !a.dynamic && strings.Contains(a.text, replace) {
			cmd[k] = literal(strings.ReplaceAll(a.text, replace, line))
		}
	}
	inner, _ := resolveLayers(cmd)
	return append(slices.Clone(layers[:i+1]), inner...)
}

// joinCode joins arguments into shell code the way watch and parallel
// do (with spaces, unquoted). Dynamic words keep their source, so the
// shell code still shows them as expansions.
func joinCode(args []arg) arg {
	var parts []string
	for _, a := range args {
		if !a.implicit {
			parts = append(parts, a.text)
		}
	}
	return literal(strings.Join(parts, " "))
}

// splitStringCode is the command env -S runs: its string, split like
// shell words, followed by the remaining arguments.
func splitStringCode(split arg, rest []arg) arg {
	if split.dynamic {
		return split
	}
	parts := []string{split.text}
	for _, a := range rest {
		parts = append(parts, quoteWord(a))
	}
	return literal(strings.Join(parts, " "))
}

// quoteWord is shell source for an argument: quoted when literal, its
// own source when dynamic.
func quoteWord(a arg) string {
	if a.dynamic {
		return a.text
	}
	q, err := syntax.Quote(a.text, syntax.LangBash)
	if err != nil {
		return `"$UNQUOTABLE"`
	}
	return q
}

// maxParallelInputs bounds how many literal inputs of parallel are
// judged one by one; past it they count as known only at run time.
const maxParallelInputs = 32

// parallelInput is what replaces {} when inputs are only known at run time.
const parallelInput = `"$PARALLEL_INPUT"`

// parallelCode is the shell code GNU parallel runs: its command template
// once per input given after :::, the input put in place of its {}
// replacement strings (or appended when there are none). With no
// template, each input is a command line itself. Inputs read from files
// or standard input are only known at run time. With -q the template's
// words are quoted as they were given.
func parallelCode(rest []arg) (arg, bool) {
	opts, ops := scanOptions(rest, optionSpec{values: "jPSadEInNLC", posix: true, longValues: []string{
		"jobs", "max-procs", "sshlogin", "arg-file", "delimiter", "eof", "max-args", "max-replace-args", "max-lines",
		"colsep", "joblog", "results", "res", "tmpdir", "workdir", "wd", "timeout", "delay", "retries", "tag-string",
		"load", "memfree", "halt", "halt-on-error", "basefile", "env", "sshloginfile", "slf"}})
	quote := has(opts, "-q", "--quote")
	var template []arg
	i := 0
	for ; i < len(ops) && !ops[i].is(":::", "::::", ":::+", "::::+"); i++ {
		template = append(template, ops[i])
	}
	inputs, known := parallelInputs(ops[i:])
	known = known && len(values(opts, "-a", "--arg-file")) == 0
	if len(template) == 0 {
		if !known {
			return arg{text: parallelInput, dynamic: true}, true
		}
		return literal(strings.Join(inputs, "\n")), true
	}
	if !known {
		return literal(fillTemplate(template, "", true, quote)), true
	}
	var lines []string
	for _, in := range inputs {
		lines = append(lines, fillTemplate(template, in, false, quote))
	}
	return literal(strings.Join(lines, "\n")), true
}

// parallelInputs are the literal values after ::: markers; known is false
// when some come from a file (::::), standard input (no marker), are only
// known at run time, or are too many to judge one by one.
func parallelInputs(sources []arg) (inputs []string, known bool) {
	if len(sources) == 0 {
		return nil, false
	}
	for _, a := range sources {
		switch {
		case a.is("::::", "::::+"):
			return nil, false
		case a.is(":::", ":::+"):
		case a.dynamic || a.glob:
			return nil, false
		default:
			inputs = append(inputs, a.text)
		}
	}
	return inputs, len(inputs) <= maxParallelInputs
}

// fillTemplate is the shell code of a template with an input in place of
// its replacement strings, appended when it has none. The input is raw
// text, or, when it is only known at run time (dynamic), ignored in
// favour of a variable. Quoted (-q), each word stays one argument.
func fillTemplate(template []arg, raw string, dynamic, quote bool) string {
	value := parallelInput
	if !dynamic {
		value = quoteWord(literal(raw))
	}
	var parts []string
	replaced := false
	for _, a := range template {
		if a.implicit {
			continue
		}
		marked := replacementStrings(a.text, "\x00")
		replaced = replaced || marked != a.text
		switch {
		case !quote:
			parts = append(parts, strings.ReplaceAll(marked, "\x00", value))
		case !dynamic:
			parts = append(parts, quoteWord(literal(strings.ReplaceAll(marked, "\x00", raw))))
		default:
			pieces := strings.Split(marked, "\x00")
			for k, p := range pieces {
				pieces[k] = quoteWord(literal(p))
			}
			parts = append(parts, strings.Join(pieces, value))
		}
	}
	code := strings.Join(parts, " ")
	if !replaced {
		code += " " + value
	}
	return code
}

// replacementStrings replaces parallel's {}, {.}, {/}, {//}, {#}, {1}, {=…=}
// with value.
func replacementStrings(code, value string) string {
	var b strings.Builder
	for {
		open := strings.IndexByte(code, '{')
		if open < 0 {
			b.WriteString(code)
			return b.String()
		}
		end := strings.IndexByte(code[open:], '}')
		if end < 0 {
			b.WriteString(code)
			return b.String()
		}
		inner := code[open+1 : open+end]
		b.WriteString(code[:open])
		if strings.ContainsAny(inner, ", \t\n{") {
			b.WriteString(code[open : open+end+1])
		} else {
			b.WriteString(value)
		}
		code = code[open+end+1:]
	}
}
