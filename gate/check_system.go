package gate

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// checkDisk judges tools that write disks: dd of=, formatting and
// partitioning tools, and copies or tees onto a device.
func (j *judge) checkDisk(fam string, l layer) {
	text := l.text()
	opts, ops := scanOptions(l.args[1:], optionSpec{})
	deny := func(reason string) { j.rule(ruleDiskWrite, reason, text) }
	switch fam {
	case "dd":
		for _, a := range l.args[1:] {
			if dest, ok := strings.CutPrefix(a.text, "of="); ok && !a.dynamic && isDiskDevice(dest) {
				deny("dd onto a disk device destroys what is on it")
				return
			}
		}
	case "mkfs", "mke2fs", "mkswap":
		deny(l.name + " formats a file system over what was there")
	case "blkdiscard":
		deny("blkdiscard discards every block of a device")
	case "wipefs":
		if has(opts, "-a", "--all", "-o", "--offset") {
			deny("wipefs erases file system signatures")
		}
	case "fdisk", "sfdisk", "cfdisk", "gdisk", "sgdisk", "parted":
		if !has(opts, "-l", "--list", "-p", "--print") && !slices.ContainsFunc(ops, func(a arg) bool { return a.is("print") }) {
			deny(l.name + " rewrites partition tables")
		}
	case "nvme":
		if len(ops) > 0 && ops[0].is("format", "sanitize") {
			deny("nvme " + ops[0].text + " erases a drive")
		}
	case "tee":
		for _, a := range ops {
			if !a.dynamic && isDiskDevice(a.text) {
				deny("tee onto a disk device destroys what is on it")
				return
			}
		}
	case "cp", "mv", "install":
		if n := len(ops); n > 0 && !ops[n-1].dynamic && isDiskDevice(ops[n-1].text) {
			deny(l.name + " onto a disk device destroys what is on it")
		}
	}
}

// checkSQL judges SQL clients given DROP or TRUNCATE, dropdb and
// mysqladmin drop.
func (j *judge) checkSQL(fam string, l layer, stmt *syntax.Stmt) {
	text := l.text()
	switch fam {
	case "dropdb":
		j.rule(ruleSQLDrop, "dropdb drops a database", text)
	case "mysqladmin":
		if slices.ContainsFunc(l.args[1:], func(a arg) bool { return a.is("drop") }) {
			j.rule(ruleSQLDrop, "mysqladmin drop drops a database", text)
		}
	default:
		var b strings.Builder
		for _, a := range l.args[1:] {
			b.WriteString(a.text)
			b.WriteByte(' ')
		}
		if stmt != nil {
			b.WriteString(literalText(stmt)) // here-documents and here-strings
		}
		if phrase := sqlDrop(b.String()); phrase != "" {
			j.rule(ruleSQLDrop, phrase+" given to "+l.name, text)
		}
	}
}

// sqlDrop finds DROP TABLE/DATABASE/SCHEMA or TRUNCATE in text, in any
// case and spacing, and returns it ("" if none).
func sqlDrop(text string) string {
	tokens := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_')
	})
	for i, t := range tokens {
		switch {
		case t == "drop" && i+1 < len(tokens) && slices.Contains([]string{"table", "database", "schema"}, tokens[i+1]):
			return "DROP " + strings.ToUpper(tokens[i+1])
		case t == "truncate" && i+1 < len(tokens):
			return "TRUNCATE"
		}
	}
	return ""
}

// checkInfra judges commands that destroy infrastructure.
func (j *judge) checkInfra(fam string, l layer) {
	text := l.text()
	args := l.args[1:]
	deny := func(reason string) { j.rule(ruleTerraformDestroy, reason, text) }
	switch fam {
	case "terraform":
		verb, rest := firstOperand(args, nil)
		switch {
		case verb == nil:
		case verb.dynamic:
			deny(l.name + "'s subcommand is only known at run time")
		case verb.is("destroy", "destroy-all"):
			deny(l.name + " destroy destroys the infrastructure it manages")
		case verb.is("run-all", "run") && slices.ContainsFunc(rest, func(a arg) bool { return a.is("destroy") }):
			deny(l.name + " " + verb.text + " destroy destroys the infrastructure it manages")
		case slices.ContainsFunc(args, func(a arg) bool { return a.is("-destroy", "--destroy") }):
			deny(l.name + " -destroy destroys the infrastructure it manages")
		case verb.is("state") && len(rest) > 0 && rest[0].is("rm"):
			deny(l.name + " state rm forgets managed resources")
		case verb.is("workspace") && len(rest) > 0 && rest[0].is("delete"):
			deny(l.name + " workspace delete deletes a workspace's state")
		}
	case "pulumi":
		for i, a := range args {
			if a.is("destroy", "down") || a.is("stack") && i+1 < len(args) && args[i+1].is("rm") {
				deny("pulumi " + a.text + " destroys a stack's resources")
				return
			}
		}
	case "cdk":
		if slices.ContainsFunc(args, func(a arg) bool { return a.is("destroy") }) {
			deny("cdk destroy destroys a stack")
		}
	case "kubectl":
		if verb, _ := firstOperand(args, []string{"-n", "--namespace", "--context", "--kubeconfig", "-s", "--server", "--cluster", "--user"}); verb != nil && (verb.dynamic || verb.is("delete")) {
			deny("kubectl delete deletes cluster resources")
		}
	case "helm":
		if verb, _ := firstOperand(args, []string{"-n", "--namespace", "--kube-context", "--kubeconfig"}); verb != nil && (verb.dynamic || verb.is("uninstall", "delete", "del", "un")) {
			deny("helm uninstall deletes a release")
		}
	}
}

// firstOperand is the first argument that is not an option, skipping the
// values of valueFlags.
func firstOperand(args []arg, valueFlags []string) (*arg, []arg) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a.is(valueFlags...):
			i++
		case a.dynamic || !strings.HasPrefix(a.text, "-"):
			return &args[i], args[i+1:]
		}
	}
	return nil, nil
}

// checkShutdown judges commands that stop the machine or every process.
func (j *judge) checkShutdown(fam string, l layer) {
	text := l.text()
	args := l.args[1:]
	deny := func(reason string) { j.rule(ruleShutdown, reason, text) }
	switch fam {
	case "shutdown":
		if !slices.ContainsFunc(args, func(a arg) bool { return a.is("--help", "-c") }) {
			deny(l.name + " stops the machine")
		}
	case "init":
		if len(args) > 0 && args[0].is("0", "1", "6", "s", "S") {
			deny(l.name + " " + args[0].text + " changes the machine's run level")
		}
	case "systemctl":
		verb, _ := firstOperand(args, []string{"-H", "--host", "-M", "--machine", "-t", "--type", "-p", "--property", "-s", "--signal"})
		if verb != nil && verb.is("poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "hybrid-sleep",
			"suspend-then-hibernate", "rescue", "emergency", "soft-reboot") {
			deny("systemctl " + verb.text + " stops the machine")
		}
	case "killall5":
		deny("killall5 signals every process")
	case "kill":
		if pid := killsEveryone(args); pid != "" {
			deny("kill " + pid + " signals every process")
		}
	}
}

// killsEveryone returns the pid (-1 or 1) when kill is aimed at every
// process or at init.
func killsEveryone(args []arg) string {
	i := 0
	switch {
	case len(args) > 0 && args[0].is("-s", "-n"):
		i = 2
	case len(args) > 0 && args[0].is("-l", "-L"):
		return ""
	case len(args) > 0 && !args[0].dynamic && strings.HasPrefix(args[0].text, "-") && !args[0].is("--"):
		i = 1
	}
	if i < len(args) && args[i].is("--") {
		i++
	}
	for ; i < len(args); i++ {
		if args[i].is("-1", "1") {
			return args[i].text
		}
	}
	return ""
}

// secretArgs judges a command's arguments for credential paths; echo and
// printf only print their arguments.
func (j *judge) secretArgs(l layer) {
	if l.name == "echo" || l.name == "printf" {
		return
	}
	for _, a := range l.args {
		if p := secretPath(a.text); p != "" && !a.implicit {
			j.rule(ruleSecretRead, "it names the credential path "+p, l.text())
			return
		}
	}
}

// secretArg judges an argument (a redirection's target) naming a credential path.
func (j *judge) secretArg(a arg, command string) {
	if p := secretPath(a.text); p != "" {
		j.rule(ruleSecretRead, "it names the credential path "+p, command)
	}
}
