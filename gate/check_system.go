package gate

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// diskTools are disk-write's tools and their checks: dd of=, formatting
// and partitioning tools, storage tools, and copies or tees onto a device.
func diskTools() map[string]ruleCheck {
	m := map[string]ruleCheck{"dd": ddOntoDisk, "nvme": nvmeErase, "tee": teeOntoDisk,
		"cp": copyOntoDisk, "mv": copyOntoDisk, "install": copyOntoDisk,
		"shred": shredDisk, "srm": shredDisk, "wipe": shredDisk}
	for fam := range diskToolHarm {
		m[fam] = formatDisk
	}
	for fam := range storageWriters {
		m[fam] = storageWriter
	}
	return m
}

func ddOntoDisk(c Invocation) (finding, bool) {
	for _, a := range c.args[1:] {
		if dest, ok := strings.CutPrefix(a.text, "of="); ok && !a.dynamic && isDiskDevice(dest) {
			return found("dd onto a disk device destroys what is on it")
		}
	}
	return finding{}, false
}

// formatDisk judges the formatting and partitioning tools (diskToolHarm).
func formatDisk(c Invocation) (finding, bool) {
	fam := family(c.name)
	opts, ops := scanOptions(c.args[1:], optionSpec{})
	if readOnlyDiskTool(fam, c.name, opts, ops) || c.onlyFiles(ops) {
		return finding{}, false
	}
	return found(c.name + " " + diskToolHarm[fam])
}

func storageWriter(c Invocation) (finding, bool) {
	opts, ops := scanOptions(c.args[1:], optionSpec{})
	if why := deviceWriter(family(c.name), opts, ops); why != "" {
		return found(c.name + " " + why)
	}
	return finding{}, false
}

func nvmeErase(c Invocation) (finding, bool) {
	_, ops := scanOptions(c.args[1:], optionSpec{})
	if len(ops) > 0 && ops[0].is("format", "sanitize") {
		return found("nvme " + ops[0].text + " erases a drive")
	}
	return finding{}, false
}

func teeOntoDisk(c Invocation) (finding, bool) {
	_, ops := scanOptions(c.args[1:], optionSpec{})
	for _, a := range ops {
		if !a.dynamic && isDiskDevice(a.text) {
			return found("tee onto a disk device destroys what is on it")
		}
	}
	return finding{}, false
}

func copyOntoDisk(c Invocation) (finding, bool) {
	_, ops := scanOptions(c.args[1:], optionSpec{})
	if n := len(ops); n > 0 && !ops[n-1].dynamic && isDiskDevice(ops[n-1].text) {
		return found(c.name + " onto a disk device destroys what is on it")
	}
	return finding{}, false
}

func shredDisk(c Invocation) (finding, bool) {
	_, ops := scanOptions(c.args[1:], optionSpec{})
	if slices.ContainsFunc(ops, func(a arg) bool { return !a.dynamic && isDiskDevice(a.text) }) {
		return found(c.name + " overwrites a disk device")
	}
	return finding{}, false
}

// redirectOntoDisk is disk-write's redirection site: > /dev/sda.
func redirectOntoDisk(c Invocation) (finding, bool) {
	r := c.redir
	if r.target.dynamic || !r.writes() || !isDiskDevice(r.target.text) {
		return finding{}, false
	}
	return matched("writing to a disk device destroys what is on it", r.text())
}

// diskToolHarm says what each formatting or partitioning tool does to
// the device it is given.
var diskToolHarm = map[string]string{
	"mkfs": "formats a file system over what was there", "mke2fs": "formats a file system over what was there",
	"mkswap": "formats a swap area over what was there", "blkdiscard": "discards every block of a device",
	"wipefs": "erases file system signatures", "fdisk": "rewrites partition tables", "sfdisk": "rewrites partition tables",
	"cfdisk": "rewrites partition tables", "gdisk": "rewrites partition tables", "sgdisk": "rewrites partition tables",
	"parted": "rewrites partition tables",
}

// readOnlyDiskTool reports the forms of the formatting and partitioning
// tools that only print or only pretend: listings, dumps, version and
// help, dry runs (mke2fs -n, mkfs.xfs -N, sgdisk -P, wipefs without -a or
// with -n), parted's print.
func readOnlyDiskTool(fam, name string, opts []option, ops []arg) bool {
	if has(opts, "--help", "-h") || has(opts, "--version", "-V") && len(ops) == 0 {
		return true
	}
	switch fam {
	case "mkfs", "mke2fs":
		ext := fam == "mke2fs" || strings.HasPrefix(name, "mkfs.ext")
		return ext && has(opts, "-n") || name == "mkfs.xfs" && has(opts, "-N")
	case "wipefs":
		return has(opts, "-n", "--no-act") || !has(opts, "-a", "--all", "-o", "--offset")
	case "fdisk":
		return has(opts, "-l", "--list", "-x", "--list-details", "-s", "--getsz", "-v")
	case "sfdisk":
		return has(opts, "-l", "--list", "-d", "--dump", "-J", "--json", "-s", "--show-size", "-V", "--verify", "-v",
			"-g", "--show-geometry", "-G", "--show-pt-geometry", "-F", "--list-free", "--backup-pt-sectors")
	case "gdisk":
		return has(opts, "-l")
	case "sgdisk":
		return has(opts, "-p", "--print", "-v", "--verify", "-i", "--info", "-O", "--print-mbr", "-P", "--pretend")
	case "parted":
		return has(opts, "-l", "--list") || slices.ContainsFunc(ops, func(a arg) bool { return a.is("print") }) &&
			!slices.ContainsFunc(ops, func(a arg) bool { return a.is("mklabel", "mkpart", "rm", "resizepart", "mkfs", "rescue") })
	}
	return false
}

// onlyFiles reports operands that are all image files rather than
// devices: no disk device, nothing only known at run time, and every path
// one a recursive delete could reach too (relative, or inside the
// workspace, a writable path or scratch), so fdisk disk.img and mkfs
// /tmp/test.img are allowed while mkfs /etc/fstab is not.
func (s scope) onlyFiles(ops []arg) bool {
	if len(ops) == 0 {
		return false
	}
	for _, a := range ops {
		if a.dynamic || isDiskDevice(a.text) || strings.HasPrefix(path.Clean(a.text), "/dev/") || s.dangerousTarget(a) != "" {
			return false
		}
	}
	return true
}

// deviceWriter says why a storage tool outside mkfs and the partitioners
// destroys a device's contents, or "" for its reading forms.
func deviceWriter(fam string, opts []option, ops []arg) string {
	if has(opts, "-h", "--help", "--version") {
		return ""
	}
	if writer, ok := storageWriters[fam]; ok {
		return writer(opts, ops)
	}
	return ""
}

// storageWriters say, per storage tool, why its command line destroys a
// device's contents (LUKS formatting, RAID and pool creation, LVM
// physical volumes, destructive badblocks, ATA secure erase, low-level
// format, firmware flashing), or "".
var storageWriters = map[string]func(opts []option, ops []arg) string{
	"cryptsetup": func(_ []option, ops []arg) string {
		if firstIs(ops, "luksFormat", "erase", "luksErase", "reencrypt", "convert", "luksKillSlot", "repair") {
			return ops[0].text + " overwrites a device's encryption header"
		}
		return ""
	},
	"mdadm": func(opts []option, _ []arg) string {
		if has(opts, "-C", "--create", "-B", "--build", "--zero-superblock", "-G", "--grow") {
			return "writes RAID metadata over devices"
		}
		return ""
	},
	"zpool": func(_ []option, ops []arg) string {
		if firstIs(ops, "create", "destroy", "labelclear", "add", "attach", "replace", "initialize", "split") {
			return ops[0].text + " writes a pool over devices"
		}
		return ""
	},
	"lvm": func([]option, []arg) string { return "writes LVM metadata over a device or destroys a volume" },
	"badblocks": func(opts []option, _ []arg) string {
		if has(opts, "-w") {
			return "-w overwrites every block of a device"
		}
		return ""
	},
	"hdparm":    hdparmWriter,
	"sg_format": func([]option, []arg) string { return "low-level formats a drive" },
	"flashrom": func(opts []option, _ []arg) string {
		if has(opts, "-w", "--write", "-E", "--erase") {
			return "writes a chip's firmware"
		}
		return ""
	},
}

// firstIs reports a first operand that is one of vals or only known at
// run time.
func firstIs(ops []arg, vals ...string) bool {
	return len(ops) > 0 && (ops[0].dynamic || ops[0].is(vals...))
}

func hdparmWriter(opts []option, _ []arg) string {
	for _, o := range opts {
		if strings.HasPrefix(o.name, "--security-erase") || strings.HasPrefix(o.name, "--fwdownload") ||
			slices.Contains([]string{"--write-sector", "--trim-sector-ranges", "--trim-sector-ranges-stdin", "--make-bad-sector", "--dco-restore"}, o.name) {
			return o.name + " destroys a drive's data"
		}
	}
	return ""
}

// sqlTools are sql-drop's tools and their checks: SQL clients given DROP
// or TRUNCATE, dropdb and mysqladmin drop.
func sqlTools() map[string]ruleCheck {
	return map[string]ruleCheck{"sql": sqlClient, "dropdb": dropdb, "mysqladmin": mysqladminDrop}
}

func dropdb(c Invocation) (finding, bool) { return found("dropdb drops a database") }

func mysqladminDrop(c Invocation) (finding, bool) {
	if slices.ContainsFunc(c.args[1:], func(a arg) bool { return a.is("drop") }) {
		return found("mysqladmin drop drops a database")
	}
	return finding{}, false
}

// sqlClient scans a SQL client's arguments and its statement's
// here-documents and here-strings.
func sqlClient(c Invocation) (finding, bool) {
	var b strings.Builder
	for _, a := range c.args[1:] {
		b.WriteString(a.text)
		b.WriteByte(' ')
	}
	if c.stmt != nil {
		b.WriteString(literalText(c.stmt))
	}
	if phrase := sqlDrop(b.String()); phrase != "" {
		return found(phrase + " given to " + c.name)
	}
	return finding{}, false
}

// sqlPiped is sql-drop's pipeline site: a pipeline with a SQL client in it
// has the whole pipeline's literal text scanned.
func sqlPiped(c Invocation) (finding, bool) {
	p := c.pipe
	if p.runner != nil || p.sql == nil {
		return finding{}, false // a download run first ends the pipeline's judging
	}
	for _, st := range p.stages {
		if phrase := sqlDrop(literalText(st)); phrase != "" {
			return matched(phrase+" is piped into "+p.sql.name, p.sql.text())
		}
	}
	return finding{}, false
}

// sqlDrop finds DROP TABLE/DATABASE/SCHEMA or TRUNCATE in text, in any
// case and spacing, and returns it ("" if none).
func sqlDrop(text string) string {
	tokens := strings.FieldsFunc(strings.ToLower(withoutSQLStrings(text)), func(r rune) bool {
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

// withoutSQLStrings blanks out SQL string literals ('…', ” escaping a
// quote): a LIKE '%drop table%' names no table to drop.
func withoutSQLStrings(text string) string {
	if !strings.Contains(text, "'") {
		return text
	}
	var b strings.Builder
	in := false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '\'' && in && i+1 < len(text) && text[i+1] == '\'':
			i++
		case c == '\'':
			in = !in
			b.WriteByte(' ')
		case !in:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// infraTools are terraform-destroy's tools and their checks.
func infraTools() map[string]ruleCheck {
	return map[string]ruleCheck{"terraform": checkTerraform, "pulumi": pulumiDestroy, "cdk": cdkDestroy,
		"kubectl": kubectlDelete, "helm": helmUninstall}
}

func pulumiDestroy(c Invocation) (finding, bool) {
	args := c.args[1:]
	for i, a := range args {
		if a.is("destroy", "down") || a.is("stack") && i+1 < len(args) && args[i+1].is("rm") {
			return found("pulumi " + a.text + " destroys a stack's resources")
		}
	}
	return finding{}, false
}

func cdkDestroy(c Invocation) (finding, bool) {
	if slices.ContainsFunc(c.args[1:], func(a arg) bool { return a.is("destroy") }) {
		return found("cdk destroy destroys a stack")
	}
	return finding{}, false
}

func kubectlDelete(c Invocation) (finding, bool) {
	args := c.args[1:]
	if verb, _ := firstOperand(args, []string{"-n", "--namespace", "--context", "--kubeconfig", "-s", "--server", "--cluster", "--user"}); verb != nil && (verb.dynamic || verb.is("delete")) && !dryRun(args) {
		return found("kubectl delete deletes cluster resources")
	}
	return finding{}, false
}

func helmUninstall(c Invocation) (finding, bool) {
	args := c.args[1:]
	if verb, _ := firstOperand(args, []string{"-n", "--namespace", "--kube-context", "--kubeconfig"}); verb != nil && (verb.dynamic || verb.is("uninstall", "delete", "del", "un")) && !dryRun(args) {
		return found("helm uninstall deletes a release")
	}
	return finding{}, false
}

// dryRun reports --dry-run in the forms that change nothing: bare (helm;
// kubectl's deprecated form, which means client), =client, =server, or
// client/server as the next word; --dry-run=none still acts.
func dryRun(args []arg) bool {
	for i, a := range args {
		switch {
		case a.dynamic:
		case a.is("--dry-run=client", "--dry-run=server", "--dry-run=true"):
			return true
		case a.is("--dry-run"):
			return i+1 == len(args) || !args[i+1].is("none", "false")
		}
	}
	return false
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

// shutdownTargets are the systemd targets that stop or suspend the machine.
var shutdownTargets = []string{"poweroff.target", "reboot.target", "halt.target", "kexec.target", "rescue.target",
	"emergency.target", "suspend.target", "hibernate.target", "hybrid-sleep.target", "suspend-then-hibernate.target",
	"soft-reboot.target", "ctrl-alt-del.target", "runlevel0.target", "runlevel1.target", "runlevel6.target",
	"systemd-poweroff.service", "systemd-reboot.service", "systemd-halt.service", "systemd-kexec.service"}

// logindMethods are logind's D-Bus methods that stop the machine.
var logindMethods = []string{"poweroff", "reboot", "halt", "suspend", "hibernate", "hybridsleep", "suspendthenhibernate", "kexec", "softreboot"}

// shutdownTools are shutdown's tools and their checks: commands that stop
// the machine or every process.
func shutdownTools() map[string]ruleCheck {
	return map[string]ruleCheck{"shutdown": stopsMachine, "init": changesRunLevel,
		"systemctl": checkSystemctl, "loginctl": checkSystemctl, "machinectl": checkSystemctl,
		"killall5": killall5, "kill": killEveryone, "dbus-send": logindCall, "busctl": logindCall, "gdbus": logindCall,
		"tee": writesSysrq, "dd": writesSysrq}
}

func stopsMachine(c Invocation) (finding, bool) {
	if !slices.ContainsFunc(c.args[1:], func(a arg) bool { return a.is("--help", "-c") }) {
		return found(c.name + " stops the machine")
	}
	return finding{}, false
}

func changesRunLevel(c Invocation) (finding, bool) {
	if args := c.args[1:]; len(args) > 0 && args[0].is("0", "1", "6", "s", "S") {
		return found(c.name + " " + args[0].text + " changes the machine's run level")
	}
	return finding{}, false
}

func killall5(c Invocation) (finding, bool) { return found("killall5 signals every process") }

func killEveryone(c Invocation) (finding, bool) {
	if pid := killsEveryone(c.args[1:]); pid != "" {
		return found("kill " + pid + " signals every process")
	}
	return finding{}, false
}

// logindCall judges dbus-send, busctl and gdbus calls of logind's methods
// that stop the machine.
func logindCall(c Invocation) (finding, bool) {
	for _, a := range c.args[1:] {
		method := strings.ToLower(a.text[strings.LastIndexAny(a.text, ". ")+1:])
		if !a.dynamic && slices.Contains(logindMethods, method) {
			return found(c.name + " calls " + a.text + ", which stops the machine")
		}
	}
	return finding{}, false
}

func writesSysrq(c Invocation) (finding, bool) {
	for _, a := range c.args[1:] {
		if isSysrq(strings.TrimPrefix(a.text, "of=")) && !a.dynamic {
			return found("writing to /proc/sysrq-trigger can reboot or halt the machine at once")
		}
	}
	return finding{}, false
}

// redirectToSysrq is shutdown's redirection site: > /proc/sysrq-trigger.
func redirectToSysrq(c Invocation) (finding, bool) {
	r := c.redir
	if r.target.dynamic || !r.writes() || !isSysrq(r.target.text) {
		return finding{}, false
	}
	return matched("writing to /proc/sysrq-trigger can reboot or halt the machine at once", r.text())
}

// checkSystemctl judges systemctl's, loginctl's and machinectl's verbs
// that stop the machine, and starting or isolating a shutdown target.
func checkSystemctl(c Invocation) (finding, bool) {
	l := c.layer
	verb, rest := firstOperand(l.args[1:], []string{"-H", "--host", "-M", "--machine", "-t", "--type", "-p", "--property", "-s", "--signal"})
	if verb == nil {
		return finding{}, false
	}
	switch {
	case verb.is("poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "hybrid-sleep",
		"suspend-then-hibernate", "rescue", "emergency", "soft-reboot") && l.name != "machinectl":
		return found(l.name + " " + verb.text + " stops the machine")
	case verb.is("start", "isolate", "restart", "reload-or-restart", "try-restart", "enable", "link") && l.name == "systemctl":
		for _, a := range rest {
			if !a.dynamic && slices.Contains(shutdownTargets, a.text) {
				return found("systemctl " + verb.text + " " + a.text + " stops the machine")
			}
		}
	}
	return finding{}, false
}

// isSysrq reports the kernel's magic SysRq trigger.
func isSysrq(p string) bool { return path.Clean(p) == "/proc/sysrq-trigger" }

// sudoTools are sudo's tools and their checks.
func sudoTools() map[string]ruleCheck {
	m := each(escalates, append([]string{"sudo", "sudoedit", "doas", "su", "runuser", "pkexec", "run0"}, privilegeFrontEnds...)...)
	m["machinectl"] = machinectlShell
	return m
}

func escalates(c Invocation) (finding, bool) {
	return found(c.name + " runs commands with another user's privileges")
}

// machinectlShell judges machinectl shell and login, which open a root
// shell in a machine (the host, .host, included).
func machinectlShell(c Invocation) (finding, bool) {
	if verb, _ := firstOperand(c.args[1:], []string{"-H", "--host", "-M", "--machine", "-E", "--setenv", "--uid"}); verb != nil && (verb.dynamic || verb.is("shell", "login")) {
		return found("machinectl " + verb.text + " opens a root shell in a machine")
	}
	return finding{}, false
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

// checkSecretArgs judges a command's arguments for credential paths; echo
// and printf only print their arguments. A relative path counts as under
// the home directory after a cd there (or somewhere unknown), and under
// tar's -C directory.
func checkSecretArgs(c Invocation) (finding, bool) {
	l := c.layer
	if l.name == "echo" || l.name == "printf" {
		return finding{}, false
	}
	base := c.cwd
	if l.name == "tar" || l.name == "bsdtar" {
		opts, _ := scanOptions(l.args[1:], optionSpec{values: "CfbTXgFLV", longValues: []string{"directory", "file", "files-from", "exclude-from"}})
		if dirs := values(opts, "-C", "--directory"); len(dirs) > 0 {
			base = dirs[len(dirs)-1].text
		}
	}
	for _, a := range l.args {
		if a.implicit {
			continue
		}
		if p := c.secretIn(a, base); p != "" {
			return found("it names the credential path " + p)
		}
	}
	return finding{}, false
}

// secretIn is the credential path an argument names, relative to base
// when relative, or through the values of a loop variable; "" for none.
func (s scope) secretIn(a arg, base string) string {
	p := secretPath(a.text)
	if p == "" && base != "" && relativePath(a) {
		p = secretPath(base + "/" + a.text)
	}
	if values, ok := loopValues(a, s.loopVars); ok && p == "" {
		for _, v := range values {
			if p = secretPath(v.text); p != "" {
				break
			}
		}
	}
	return p
}

// relativePath reports an argument that names a path relative to the
// current directory.
func relativePath(a arg) bool {
	t := a.text
	return t != "" && !a.dynamic && !strings.HasPrefix(t, "/") && !strings.HasPrefix(t, "~") && !strings.HasPrefix(t, "-")
}

// redirectFromSecret is secret-read's redirection site: a target (not a
// here-document) naming a credential path.
func redirectFromSecret(c Invocation) (finding, bool) {
	r := c.redir
	if r.target.dynamic || r.op == syntax.Hdoc || r.op == syntax.DashHdoc || r.op == syntax.WordHdoc {
		return finding{}, false
	}
	p := secretPath(r.target.text)
	if p == "" && c.cwd != "" && relativePath(r.target) {
		p = secretPath(c.cwd + "/" + r.target.text)
	}
	if p == "" {
		return finding{}, false
	}
	return matched("it names the credential path "+p, r.text())
}

// checkTerraform judges terraform, tofu and terragrunt: destroy, apply
// -destroy (plan -destroy only prints), state rm, workspace delete.
func checkTerraform(c Invocation) (finding, bool) {
	l := c.layer
	args := l.args[1:]
	verb, rest := firstOperand(args, nil)
	switch {
	case verb == nil:
	case verb.dynamic:
		return found(l.name + "'s subcommand is only known at run time")
	case verb.is("destroy", "destroy-all"):
		return found(l.name + " destroy destroys the infrastructure it manages")
	case verb.is("run-all", "run") && slices.ContainsFunc(rest, func(a arg) bool { return a.is("destroy") }):
		return found(l.name + " " + verb.text + " destroy destroys the infrastructure it manages")
	case !verb.is("plan", "show", "validate", "graph") && slices.ContainsFunc(args, func(a arg) bool { return a.is("-destroy", "--destroy") }):
		return found(l.name + " -destroy destroys the infrastructure it manages")
	case verb.is("state") && len(rest) > 0 && rest[0].is("rm"):
		return found(l.name + " state rm forgets managed resources")
	case verb.is("workspace") && len(rest) > 0 && rest[0].is("delete"):
		return found(l.name + " workspace delete deletes a workspace's state")
	}
	return finding{}, false
}
