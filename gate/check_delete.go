package gate

import (
	"path"
	"strings"
)

// dangerousTarget is Gate.dangerousTarget, also refusing relative paths
// once a cd has left the workspace: the gate does not follow cd, so after
// cd / it cannot tell what etc means.
func (j *judge) dangerousTarget(a arg) string {
	why := j.gate.dangerousTarget(a)
	if why == "" && j.movedTo != "" && a.text != "" && !path.IsAbs(a.text) && !strings.HasPrefix(a.text, "~") {
		return "a relative path after cd " + j.movedTo
	}
	return why
}

// checkCd notes a cd, pushd or popd to where relative paths may reach too
// far: /, the home directory, outside the workspace, back (cd -, popd) or
// somewhere only known at run time.
func (j *judge) checkCd(l layer) {
	_, ops := scanOptions(l.args[1:], optionSpec{})
	target := literal("~")
	switch {
	case l.name == "popd":
		target = literal("-")
	case len(ops) > 0:
		target = ops[0]
	}
	if target.dynamic || target.is("-") || strings.HasPrefix(target.text, "+") {
		j.movedTo = target.text
		return
	}
	if j.gate.dangerousTarget(under(target)) != "" {
		j.movedTo = target.text
	}
}

// checkRm judges rm -r (with or without -f: without a terminal there is
// nobody to answer its questions, so -f changes little).
func (j *judge) checkRm(l layer) {
	opts, ops := scanOptions(l.args[1:], optionSpec{})
	recursive := has(opts, "-r", "-R", "--recursive")
	// A word only known at run time may be -rf, given another to delete.
	if !recursive && !(mayHideOption(l.args[1:]) && len(ops) >= 2) {
		return
	}
	for _, t := range ops {
		if why := j.dangerousTarget(t); why != "" {
			j.rule(ruleRecursiveDelete, "rm -r would delete "+why, l.text())
			return
		}
	}
}

// checkFind judges find -delete on its starting points and the commands
// -exec, -execdir, -ok and -okdir run, with {} standing for a path under
// the most dangerous starting point.
func (j *judge) checkFind(l layer) {
	args := l.args[1:]
	i := 0
	for i < len(args) && (args[i].is("-H", "-L", "-P") || !args[i].dynamic && strings.HasPrefix(args[i].text, "-O")) {
		i++
	}
	if i < len(args) && args[i].is("-D") {
		i += 2
	}
	var starts []arg
	for ; i < len(args); i++ {
		a := args[i]
		if !a.dynamic && (strings.HasPrefix(a.text, "-") || a.is("(", "!", ")", ",")) {
			break
		}
		starts = append(starts, a)
	}
	if len(starts) == 0 {
		starts = []arg{literal(".")}
	}
	found := starts[0] // what {} stands for: a path under the worst start
	for _, s := range starts {
		if j.dangerousTarget(under(s)) != "" {
			found = s
			break
		}
	}
	var expr []arg
	if i < len(args) {
		expr = args[i:]
	}
	for k := 0; k < len(expr) && !j.stopped(); k++ {
		switch {
		case expr[k].is("-delete"):
			for _, s := range starts {
				target := under(s) // what it matches, unless nothing narrows it down
				if len(expr) == 1 {
					target = s
				}
				if why := j.dangerousTarget(target); why != "" {
					j.rule(ruleRecursiveDelete, "find -delete would delete "+why, l.text())
					return
				}
			}
		case expr[k].is("-exec", "-execdir", "-ok", "-okdir"):
			end := k + 1
			for end < len(expr) && !expr[end].is(";", "+") {
				end++
			}
			inner := substituteFound(expr[k+1:end], under(found))
			j.nested(func() { j.command(inner, nil) })
			k = end
		}
	}
}

// under is a path inside a find starting point, what {} becomes.
func under(start arg) arg {
	if start.dynamic {
		return start
	}
	return literal(strings.TrimSuffix(start.text, "/") + "/x")
}

// substituteFound puts a found path in place of {}. As the command's name
// {} is only known at run time.
func substituteFound(args []arg, found arg) []arg {
	out := make([]arg, len(args))
	for i, a := range args {
		switch {
		case !strings.Contains(a.text, "{}"):
			out[i] = a
		case i == 0 || a.dynamic || found.dynamic:
			out[i] = arg{text: a.text, dynamic: true, word: a.word}
		default:
			out[i] = literal(strings.ReplaceAll(a.text, "{}", found.text))
		}
	}
	return out
}

// checkShred judges shred, srm and wipe, which destroy what they are given.
func (j *judge) checkShred(l layer) {
	_, ops := scanOptions(l.args[1:], optionSpec{values: "ns", longValues: []string{"iterations", "size", "random-source"}})
	for _, t := range ops {
		if !t.dynamic && isDiskDevice(t.text) {
			j.rule(ruleDiskWrite, l.name+" overwrites a disk device", l.text())
			return
		}
		if why := j.dangerousTarget(t); why != "" {
			j.rule(ruleRecursiveDelete, l.name+" would destroy "+why, l.text())
			return
		}
	}
}

// checkRsync judges rsync --delete, which empties its destination of what
// the source lacks.
func (j *judge) checkRsync(l layer) {
	opts, ops := scanOptions(l.args[1:], optionSpec{values: "efTB", longValues: []string{
		"rsh", "filter", "exclude", "include", "files-from", "rsync-path", "temp-dir", "log-file", "password-file",
		"chmod", "chown", "bwlimit", "max-size", "min-size", "exclude-from", "include-from", "compare-dest", "copy-dest", "link-dest"}})
	if !hasPrefixed(opts, "--delete") || len(ops) < 2 {
		return
	}
	dest := ops[len(ops)-1]
	if !dest.dynamic && strings.Contains(strings.SplitN(dest.text, "/", 2)[0], ":") {
		return // a remote destination: the sandbox's network policy decides
	}
	if why := j.dangerousTarget(dest); why != "" {
		j.rule(ruleRecursiveDelete, "rsync --delete would delete from "+why, l.text())
	}
}

// checkChmod judges recursive permission and ownership changes.
func (j *judge) checkChmod(l layer) {
	spec := optionSpec{}
	if l.name == "setfacl" {
		spec = optionSpec{values: "mMxX", longValues: []string{"set", "set-file", "modify", "modify-file", "remove", "remove-file"}}
	}
	opts, ops := scanOptions(l.args[1:], spec)
	if !has(opts, "-R", "--recursive") {
		return
	}
	targets := ops
	modeAsOption := l.name == "chmod" && has(opts, "-r", "-w", "-x", "-X", "-s", "-t")
	if l.name != "setfacl" && !hasPrefixed(opts, "--reference") && !modeAsOption && len(targets) > 0 {
		targets = targets[1:] // the mode or owner
	}
	for _, t := range targets {
		if why := j.dangerousTarget(t); why != "" {
			j.rule(ruleRecursiveChmod, l.name+" -R would change "+why, l.text())
			return
		}
	}
}
