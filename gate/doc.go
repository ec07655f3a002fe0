// Package gate judges a command before any sandbox runs it.
//
// It parses the command as bash does (mvdan.cc/sh/v3/syntax) and judges
// every simple command the shell would run: each statement, pipeline stage
// and &&/|| branch, the bodies of subshells, blocks, loops, functions and
// case arms, command and process substitutions, background jobs and
// coprocesses, values assigned by declare/export/local, arithmetic and
// here-documents. A command is judged after the shell's own quoting is
// undone (\rm, 'rm' and r""m are all rm), with its path stripped
// (/bin/rm is rm), without its VAR=value prefixes, and through the wrappers
// that run another command: sudo, doas, su -c, env (-i, -u, -S), nice,
// nohup, timeout, time, stdbuf, ionice, chrt, taskset, setsid, xargs,
// command, builtin, exec, busybox, watch, flock, unbuffer, script -c and GNU
// parallel. A shell started with -c (sh, bash, dash, zsh, ksh, …, with -lc,
// -ec and other combined flags), eval, trap, alias and the code-holding
// variables (GIT_PAGER, GIT_SSH_COMMAND, PROMPT_COMMAND, …) have their code
// parsed and judged the same way, as do find -exec/-execdir/-ok and git's
// -c alias.x=!… and pager settings. Nesting and input size are bounded, and
// anything the shell itself could not parse is denied.
//
// The default rules (see DefaultRules) deny GitHub writes, pushing and
// rewriting git history, installing packages, running downloaded code,
// recursive deletes outside the workspace, privilege escalation, writing to
// disk devices, dropping SQL tables, destroying infrastructure, halting the
// machine, fork bombs and reading credential files. Operators add deny and
// confirm patterns (fnmatch globs, as ai-triager had) and may disable a rule
// or turn it into a confirmation.
//
// What it cannot see: the contents of scripts and files it is asked to run
// (python3 x.py, bash build.sh, psql -f drop.sql), code in other languages
// (python -c, perl -e, awk's system(), sed's e command), values only known
// at run time (in the agent role a command whose name is not literal is
// denied; in the reproducer role it is allowed and only its literal parts
// are judged), tools it does not know (ssh host cmd, docker exec, make),
// aliases and configuration set in earlier commands or files (a git alias in
// ~/.gitconfig, a function defined in a sourced file), and multi-step
// tricks (curl -o x.sh … then sh x.sh). It is a cheap filter that stops the
// obvious and the careless; the sandbox is the real boundary.
package gate
