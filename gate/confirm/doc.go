// Package confirm asks the operator, on the controlling terminal, whether a
// command that a gate rule marked "confirm" may run.
//
// The command text comes from an agent that has read hostile issue text, so
// everything here assumes the command is written by an adversary:
//
//   - Default deny. The zero Answer is No, and every failure is No: no
//     controlling terminal, a process in the terminal's background, a
//     cancelled context, SIGINT, Ctrl-C, end of input or hang-up, a countdown
//     that runs out, a paste, any key but y/Y/s/S. When Ask returns an error
//     the Answer is always No.
//   - The agent cannot answer. The prompt is read from /dev/tty (never stdin),
//     input that was waiting before the prompt was shown is discarded, and
//     only a single key typed on its own answers: several bytes arriving at
//     once (a paste, a terminal's reply to a query) are No.
//   - The agent cannot fake the prompt or hide part of the command. The
//     command is shown through Sanitize, which turns every control character,
//     escape sequence introducer, bidi override and invisible character into
//     a visible stand-in, and it is drawn inside a frame whose every line
//     starts with a border the text cannot produce on its own. Nothing the
//     command contains is dropped: the printable payload of an escape
//     sequence stays visible, because "sh -c 'echo <ESC>]0;; rm -rf ~ <BEL>'"
//     runs the rm that a stripped payload would have hidden.
//   - "Allow for this session" is remembered per exact command line (Memory),
//     never per command name.
//
// Everything is written to the terminal, never to stdout or stderr, so a
// piped result stays clean and the prompt cannot be captured by whoever
// reads the process's output. Terminal handling needs Linux; elsewhere
// OpenTerminal fails and so every confirm rule denies.
//
// What this package cannot stop: a process that can write to the same
// terminal's input (TIOCSTI) can type an answer. Sandboxed commands must
// not have the operator's terminal; that is the sandbox's job.
package confirm
