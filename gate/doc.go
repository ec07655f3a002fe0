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
// (\rm, 'rm', r""m and $'\x72m' are rm), braces expanded ({rm,-rf,/}), its
// directory dropped (/bin/rm is rm, ./rm too) and its name lower-cased, its
// VAR=value prefixes set aside, and the wrappers in front of it looked
// through: sudo, doas, su -c, env (-i, -u, -S), nice, nohup, timeout, time,
// stdbuf, ionice, chrt, taskset, setsid, xargs, command, builtin, exec,
// busybox, watch, flock, unbuffer, script -c and GNU parallel. Flags are
// read the way the tool reads them (rm -fr, -r -f and --recursive --force
// are one thing; git -C dir push is push; gh api -XPOST, -X POST and
// --method=POST are one method). Code held in arguments is parsed and
// judged in turn: sh -c (and bash -lc, -ec …), eval, trap, alias, a shell's
// here-document or here-string, echo/printf piped into a shell, git's
// -c alias.x=!… and pager settings, the code-holding variables (GIT_PAGER,
// GIT_SSH_COMMAND, PROMPT_COMMAND, …) and find -exec/-execdir/-ok.
//
// The default rules (see DefaultRules) deny GitHub writes (gh, gh api, and
// curl/wget/httpie to api.github.com), credential handling in gh, pushing
// and rewriting git history, installing software, running downloaded code,
// recursive deletes and permission changes outside the workspace,
// privilege escalation, writing disk devices, dropping SQL tables,
// destroying infrastructure, halting the machine, fork bombs and naming
// credential files. Operators add deny and confirm patterns (fnmatch globs,
// as ai-triager had) and may disable a rule or make it ask for
// confirmation instead.
//
// In the agent role a command whose name or code is only known at run time
// ($CMD, "$@", eval "$X", sh -c "$X", source "$F", cat x | sh) is denied
// (rule "dynamic") unless AllowDynamic is set; in the reproducer role it is
// allowed and only its literal parts are judged. Arguments only known at
// run time count as the dangerous case where a rule cares (rm -rf "$X").
// Anything the shell itself could not parse is denied (rule "parse"), as is
// a command too large or too deeply nested to judge (rule "limit").
//
// What it cannot see: the contents of files it is asked to run (python3
// x.py, bash build.sh, psql -f drop.sql, a git alias in ~/.gitconfig, a
// function from a sourced file), code in other languages (python -c, perl
// -e, awk's system(), sed's e command), what a command prints before a
// shell runs it (other than echo and printf), tools it does not know (ssh
// host cmd, docker exec, make, npm scripts), commands whose name is a glob
// in the reproducer role, and multi-step tricks (curl -o x.sh … then sh
// x.sh; ln -s / x then rm -rf x/). It does not follow cd: after a cd out of
// the workspace it refuses relative recursive deletes instead. It is a
// cheap filter that stops the obvious and the careless; the sandbox is the
// real boundary.
package gate
