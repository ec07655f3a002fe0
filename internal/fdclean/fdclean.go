// Package fdclean keeps the caller's descriptors out of the sandbox. A
// process that starts triage-sandbox may hold descriptors without
// close-on-exec (an agent harness's log file, a credential it read); Go's
// exec passes only what it is given, but an inherited descriptor that is
// not close-on-exec survives every exec below it, into the command.
package fdclean

// CloseOnExecAbove marks every descriptor above fd close-on-exec, so no
// process this one starts inherits it unless it is passed on purpose
// (exec.Cmd's ExtraFiles, a control channel's SCM_RIGHTS). The descriptors
// stay usable here.
func CloseOnExecAbove(fd int) error { return closeOnExecAbove(fd) }
