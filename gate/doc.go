// Package gate judges a command before any sandbox runs it.
//
// It parses the command as bash does (mvdan.cc/sh/v3/syntax) instead of
// splitting strings, and judges every simple command the shell would run:
// each statement, pipeline stage and &&/|| branch, the bodies of subshells,
// blocks, loops, if/case arms and functions, command and process
// substitutions, background jobs and coprocesses, values assigned by
// declare/export/local, arithmetic, here-documents and redirections. The
// strictest verdict found wins: deny over confirm over allow.
//
// A command is judged as the shell would run it: quoting and escapes undone
// (\rm, 'rm', r""m and $'\x72m' are rm), braces expanded ({rm,-rf,/}),
// an unquoted $IFS taken as the word break it is (rm${IFS}-rf${IFS}/), its
// directory dropped (/bin/rm is rm, ./rm too) and its name lower-cased, its
// VAR=value prefixes set aside, aliases and argument-running functions
// defined earlier in the line expanded (alias g=git; g push), and the
// wrappers in front of it looked through: sudo, doas, su -c, env (-i, -,
// -u, -S), nice, nohup, timeout, time, stdbuf, ionice, chrt, taskset,
// setsid, unshare, chroot, nsenter, systemd-run, strace, ltrace, xvfb-run,
// command, builtin, exec, busybox, watch, flock, unbuffer, script -c, uv
// run, poetry run, bundle exec, conda run and kin. Tools that run a
// command for what they read or find are judged by what they will run:
// xargs (-I, -J, or its input appended, which may be nothing, or the
// words a literal echo before it in the pipeline gives it), GNU
// parallel (its template once per ::: input, each input as a command when
// there is no template, -q's quoting; inputs from files or standard input
// are only known at run time), find -exec/-execdir/-ok (with {} standing
// for what is found: the starting point itself unless a test before the
// action narrows it, so find . -delete -name x and find . -exec rm -f {} +
// delete everything, a test's value is not an action (find . -name
// -delete deletes nothing), and rm run on each file found counts as rm -r), rg
// --pre and git difftool -x. Flags are read the way the tool reads them
// (rm -fr, -r -f and --recursive --force are one thing; git -C dir push is
// push; gh api -XPOST, -X POST and --method=POST are one method); --help and
// --version make any command but a shell or interpreter harmless. Code
// held in arguments is parsed and judged in turn: sh -c (and bash -lc, -ec
// …), eval, trap, alias, a shell's here-document or here-string, echo or
// printf piped or process-substituted into a shell (sh < <(echo …),
// echo … > >(sh)), at and batch's input, git's -c alias.x=!… and pager
// settings, the code-holding variables (GIT_PAGER, GIT_SSH_COMMAND,
// PROMPT_COMMAND, …). A file a downloader wrote earlier in the same command
// line (curl -o x.sh URL && bash x.sh) is downloaded code when it is run.
//
// Code in other languages on the command line or in a here-document
// (python -c, node -e, ruby -e, perl -e, php -r, Rscript/R -e, julia -e,
// awk programs, python3 <<EOF, echo … | python3) is scanned for the rules'
// intents where they are plain to see: a call that runs a literal command
// (os.system, subprocess.run/call/Popen with a string or a list,
// child_process exec/execSync/spawn, system, exec, backticks, %x(), qx(),
// shell_exec, awk's system() and "cmd" | getline) is judged as that
// command by every rule; rmtree, rm_rf, rmSync/rmdirSync with recursive,
// rimraf and kin of a literal path or of the home directory are judged as
// rm -r of it; install.packages, Pkg.add, pip.main and kin are
// package-install. Code that computes what it runs is not followed.
//
// The gate is a walker and a rule table. The walker (walk, words,
// wrappers, paths, pipeline, braces, glob, options) reads the command line
// and hands the rules one read-only Invocation per site it reaches: each
// command layer, redirection, pipeline, function definition, and code a
// command runs (a download, another language). Rules are pure functions
// over an Invocation and never see the walker's state.
//
// The default rules (see DefaultRules; each is one entry of ruleTable with
// the sites it judges, one map of its tools and their checks, a
// description that says why, and match / not-match examples that
// TestRuleExamples proves for every build) deny GitHub writes (gh, gh
// api, and curl/wget/httpie to api.github.com), credential handling in gh,
// pushing (and its plumbing, send-pack and http-push) and rewriting git
// history, discarding uncommitted work, asking credential stores for
// secrets (git credential fill, security find-generic-password…),
// installing software, running downloaded code, recursive deletes and
// permission changes outside the workspace and scratch, privilege
// escalation, writing disk devices, dropping SQL tables, destroying
// infrastructure, halting the machine (systemctl, loginctl, SysRq, logind
// over D-Bus), fork bombs and naming credential files. Operators add deny
// and confirm patterns (fnmatch globs, as ai-triager had) and may disable
// a rule or make it ask for confirmation instead.
//
// Paths are judged as the sandbox sees them: HOME and TMPDIR are each
// sandbox's own fresh scratch (the policy sets them; Config.Scratch), so rm -rf
// "$HOME/.cache", $TMPDIR/x, ${TMPDIR:-/tmp}/x and a directory a mktemp
// earlier in the line made are allowed (a VAR=value in front of a command
// sets it for that command only: HOME=$(mktemp -d) cmd; rm -rf "$HOME" is
// the real home), while the home directory itself,
// a HOME or TMPDIR the line sets, exports, reads or unsets anywhere
// (TMPDIR=; rm -rf $TMPDIR/x), and, when there is no sandbox (allow_all,
// Config.Scratch false), every path in the home, TMPDIR and /tmp,
// everything in it, and paths climbing out are not. The gate follows cd:
// relative paths resolve against where it went, and after a cd it cannot
// follow ($D, -) relative recursive deletes are refused. A for loop's
// variable over literal words or globs is each of them where a path is
// judged (for d in build /tmp/x; do rm -rf "$d"; done). A credential path
// is found also through globs (~/.s?h, ~/.[s]sh: denied when it could
// expand to one), ./ and ../, case changes, a variable in front of it
// ($H/.ssh: the variable may hold a home), a relative path after cd ~ or
// under tar -C ~, and a search from a home directory whose -exec command
// would be given what it finds.
//
// The gate cannot tell whether the project already has a tool npx would
// fetch (the workspace is not read): npx is denied, and the denial points at
// node_modules/.bin/TOOL and npx --no-install, which are allowed (Decision.Hint).
//
// Every default rule applies in both roles (RuleInfo.Reproducer says why,
// rule by rule): each guards something a reproducer must not do either
// (publish, install, run downloads, delete outside its scratch, escalate,
// destroy devices or infrastructure, read credentials), and download-exec
// above all: a reproducer that pipes the network into a shell is the
// textbook hostile reproducer. Code that only the agent's catch-all
// stopped is judged in both roles where the gate can read it: echo BASE64
// | base64 -d | sh runs what it decodes to, $SHELL -c CODE runs CODE,
// X='…'; eval "$X" runs the literal X holds.
//
// In the agent role a command whose name or code is only known at run time
// ($CMD, "$@", eval "$X", sh -c "$X", source "$F", cat x | sh, cat x |
// python3, sed's s///e) is denied (rule "dynamic") unless AllowDynamic is
// set; in the reproducer role it is allowed and only its literal parts
// are judged. Arguments only known at run time count as the dangerous
// case where a rule cares (rm -rf "$X").
// Anything the shell itself could not parse is denied (rule "parse"), as is
// a command too large or too deeply nested to judge (rule "limit").
//
// What it cannot see: the contents of files it is asked to run (python3
// x.py, bash build.sh, psql -f drop.sql, a git alias in ~/.gitconfig, a
// function from a sourced file), code in other languages beyond the calls
// above (computed commands, eval of built strings; sed's e command with a
// literal command is judged, PowerShell only for iex of a download), what
// a command prints before a shell runs it (other than echo and printf),
// tools it does not know (ssh host cmd, docker exec, make, npm scripts),
// commands whose name is a glob in the reproducer role, and multi-step
// tricks it does not model (ln -s / x then rm -rf x/). It is a cheap
// filter that stops the obvious and the careless; the sandbox is the real
// boundary.
package gate
