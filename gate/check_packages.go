package gate

import (
	"slices"
	"strings"
)

// installVerbs lists, per package manager, the subcommands that install,
// upgrade or remove software (or fetch and run it, like npx).
func installVerbs(manager string) []string {
	if alias, ok := packageManagerAliases[manager]; ok {
		manager = alias
	}
	if verbs, ok := packageVerbs[manager]; ok {
		return verbs
	}
	return toolManagerVerbs[manager]
}

// packageManagerAliases are the package managers whose verbs are
// another's.
var packageManagerAliases = map[string]string{"mamba": "conda", "micromamba": "conda", "bundler": "bundle",
	"apt-get": "apt", "aptitude": "apt", "yum": "dnf", "microdnf": "dnf", "zypper": "dnf", "tdnf": "dnf",
	"flatpak": "snap", "asdf": "mise", "rtx": "mise"}

// packageVerbs are the install verbs of the common package managers.
var packageVerbs = map[string][]string{
	"pip":    {"install", "uninstall"},
	"pipx":   {"install", "install-all", "inject", "upgrade", "upgrade-all", "reinstall", "reinstall-all", "run", "runpip", "uninstall"},
	"poetry": {"add", "install", "update", "remove", "sync", "self", "lock"},
	"pixi":   {"install", "add", "update", "upgrade", "remove", "rm", "global", "self-update", "exec"},
	"conda":  {"install", "create", "update", "upgrade", "remove", "uninstall", "env", "self-update"},
	"npm": {"install", "i", "in", "ins", "inst", "insta", "instal", "isnt", "isnta", "isntal", "isntall", "add",
		"ci", "clean-install", "ic", "install-clean", "isntall-clean", "install-test", "it", "install-ci-test", "cit",
		"update", "up", "upgrade", "udpate", "uninstall", "un", "unlink", "remove", "rm", "r", "link", "ln", "exec", "x"},
	"pnpm":   {"install", "i", "add", "update", "up", "upgrade", "remove", "rm", "un", "uninstall", "link", "ln", "dlx", "import"},
	"yarn":   {"install", "add", "upgrade", "up", "remove", "link", "dlx", "global"},
	"bun":    {"install", "i", "add", "a", "remove", "rm", "update", "upgrade", "link", "x"},
	"gem":    {"install", "i", "update", "uninstall"},
	"bundle": {"install", "update", "add"},
	"cargo":  {"install", "add", "remove", "rm", "uninstall", "binstall"},
	"go":     {"install", "get"},
	"apt":    {"install", "remove", "purge", "upgrade", "dist-upgrade", "full-upgrade", "autoremove", "update", "reinstall", "build-dep"},
	"dnf": {"install", "in", "remove", "rm", "erase", "update", "upgrade", "up", "reinstall", "downgrade",
		"groupinstall", "group", "autoremove", "distro-sync", "dup", "patch", "addrepo", "ar"},
	"apk":      {"add", "del", "upgrade", "update", "fix"},
	"brew":     {"install", "reinstall", "uninstall", "remove", "rm", "upgrade", "update", "tap", "bundle", "autoremove"},
	"port":     {"install", "uninstall", "upgrade", "selfupdate"},
	"snap":     {"install", "remove", "uninstall", "refresh", "update"},
	"nix":      {"profile", "shell", "run", "develop"},
	"pdm":      {"add", "install", "sync", "update", "remove", "self", "import"},
	"rye":      {"add", "remove", "sync", "install", "uninstall", "tools", "self", "fetch", "toolchain"},
	"hatch":    {"env"},
	"composer": {"require", "install", "update", "remove", "global"},
	"luarocks": {"install", "remove"},
	"rustup":   {"install", "update", "toolchain", "target", "component", "self"},
	"mise":     {"install", "use", "plugin", "plugins", "upgrade"},
}

// toolManagerVerbs are the verbs of version and tool managers (pyenv, nvm,
// ghcup, gcloud components…) and of language package managers beyond the
// common ones that install, upgrade or remove software. A verb that is a
// group has its second words in toolManagerSubVerbs.
var toolManagerVerbs = map[string][]string{
	"pyenv": {"install", "uninstall"}, "rbenv": {"install", "uninstall"}, "nodenv": {"install", "uninstall"},
	"goenv": {"install", "uninstall"}, "plenv": {"install", "uninstall"}, "phpenv": {"install", "uninstall"},
	"nvm": {"install", "uninstall", "install-latest-npm", "reinstall-packages"}, "fnm": {"install", "uninstall"},
	"n": {"install", "rm", "uninstall", "prune", "latest", "lts"}, "volta": {"install", "uninstall", "fetch", "pin"},
	"ghcup": {"install", "rm", "upgrade", "nuke"}, "sdk": {"install", "i", "uninstall", "rm", "upgrade", "ug", "selfupdate"},
	"cabal": {"install", "v1-install", "v2-install"}, "stack": {"install", "upgrade"},
	"opam": {"install", "remove", "uninstall", "upgrade", "reinstall", "switch"}, "nimble": {"install", "uninstall"},
	"vcpkg": {"install", "remove", "upgrade"}, "tlmgr": {"install", "remove", "update"},
	"pkg":   {"install", "add", "delete", "remove", "upgrade"},
	"choco": {"install", "uninstall", "upgrade"}, "winget": {"install", "uninstall", "upgrade"},
	"scoop": {"install", "uninstall", "update"}, "mas": {"install", "uninstall", "upgrade", "purchase"},
	"fvm": {"install", "remove", "use"}, "kerl": {"build-install", "install", "build", "delete", "update"},
	"expo": {"install"}, "berks": {"install", "update"}, "deno": {"install", "uninstall", "add", "remove", "upgrade"},
	"mix":    {"archive.install", "escript.install", "local.hex", "local.rebar", "deps.get", "deps.update"},
	"gcloud": {"components"}, "dotnet": {"tool", "workload", "add"}, "az": {"extension", "bicep"},
	"helm": {"plugin"}, "kubectl": {"krew"}, "krew": {"install", "uninstall", "upgrade"}, "raco": {"pkg"},
}

// toolManagerSubVerbs are the second words of toolManagerVerbs' groups.
var toolManagerSubVerbs = map[string][]string{
	"gcloud components": {"install", "update", "remove", "reinstall"},
	"dotnet tool":       {"install", "update", "uninstall"}, "dotnet workload": {"install", "update", "uninstall", "repair", "restore"},
	"dotnet add":   {"package"},
	"az extension": {"add", "remove", "update"}, "az bicep": {"install", "upgrade", "uninstall"},
	"helm plugin": {"install", "uninstall", "update"}, "kubectl krew": {"install", "uninstall", "upgrade"},
	"raco pkg": {"install", "remove", "update"},
}

// installValueFlags are global options that take a value before the verb.
func installValueFlags(manager string) []string {
	switch manager {
	case "pip":
		return []string{"--proxy", "--retries", "--timeout", "--exists-action", "--trusted-host", "--cert", "--client-cert",
			"--cache-dir", "--log", "--python", "--keyring-provider", "--use-feature", "--use-deprecated"}
	case "npm", "pnpm", "yarn", "bun":
		return []string{"--prefix", "--registry", "--cache", "--userconfig", "--globalconfig", "--workspace", "-w",
			"--loglevel", "-C", "--dir", "--cwd", "--filter", "-F"}
	case "conda", "mamba", "micromamba":
		return []string{"-n", "--name", "-p", "--prefix", "-r", "--root-prefix"}
	case "cargo":
		return []string{"-Z", "--config", "--color", "-C"}
	case "go":
		return []string{"-C"}
	case "brew", "apt", "apt-get", "dnf", "yum", "zypper", "composer":
		return []string{"-o", "-c", "--config", "-d", "--working-dir", "--root", "--installroot"}
	}
	return nil
}

// checkPackages judges package managers, python -m of one, setup.py
// install and R CMD INSTALL.
func checkPackages(c Invocation) (finding, bool) {
	manager := family(c.name)
	args := c.args[1:]
	switch manager {
	case "python":
		return checkPythonInstall(args)
	case "r":
		if len(args) > 1 && args[0].is("CMD") && args[1].is("INSTALL", "REMOVE") {
			return found("R CMD " + args[1].text + " installs or removes an R package")
		}
		return finding{}, false
	}
	if check, ok := ownPackageChecks[manager]; ok {
		return check(manager, args)
	}
	return checkInstallVerb(manager, args)
}

// checkPythonInstall judges python -m MODULE (pip, pip.__main__, pipx…,
// ensurepip) as the module's own command, and setup.py install|develop.
func checkPythonInstall(args []arg) (finding, bool) {
	ic := parseInterpreter("python", args)
	switch {
	case ic.module != nil && !ic.module.dynamic:
		name, _, _ := strings.Cut(ic.module.text, ".")
		if name == "ensurepip" {
			return found("python -m ensurepip installs pip")
		}
		return checkPackages(Invocation{layer: layer{name: name, args: append([]arg{literal(name)}, ic.moduleArgs...)}})
	case ic.script != nil && !ic.script.dynamic && commandName(ic.script.text) == "setup.py":
		_, ops := scanOptions(args, optionSpec{values: "cmWX", posix: true})
		for _, a := range after(ops, 1) {
			if a.is("install", "develop", "easy_install", "bdist_egg") {
				return found("setup.py " + a.text + " installs the package")
			}
		}
	}
	return finding{}, false
}

// packageCheck judges a package manager whose command line has rules of
// its own (which may include checkInstallVerb's).
type packageCheck func(manager string, args []arg) (finding, bool)

// ownPackageChecks are the package managers not judged (or not only) by
// their install verbs.
var ownPackageChecks = map[string]packageCheck{
	"npx": checkFetchAndRun, "pnpx": checkFetchAndRun, "bunx": checkFetchAndRun, "uvx": checkFetchAndRun,
	"easy_install": checkFetchAndRun, "pip-sync": checkFetchAndRun, "cpanm": checkFetchAndRun,
	"cpan":   checkCpan,
	"uv":     func(_ string, args []arg) (finding, bool) { return checkUv(args) },
	"yarn":   checkBareYarn,
	"dpkg":   checkDpkg,
	"rpm":    func(_ string, args []arg) (finding, bool) { return checkRpm(args) },
	"pacman": checkPacman, "yay": checkPacman, "paru": checkPacman,
	"nix-env": checkNixEnv,
	"gh":      checkGhExtension,
	"emerge":  checkOperandInstalls, "pkg_add": checkOperandInstalls, "pkg_delete": checkOperandInstalls,
	"nix-shell": func(_ string, args []arg) (finding, bool) {
		if _, ok := findOption(args, "-p", "--packages"); ok {
			return found("nix-shell -p fetches and installs packages")
		}
		return finding{}, false
	},
}

// checkFetchAndRun judges the tools that install (and run) packages from a
// registry whatever their arguments; only npx can be told not to. The
// gate cannot see whether the project already has the tool, so for npx
// the denial points at the form that runs only the project's own copy.
func checkFetchAndRun(manager string, args []arg) (finding, bool) {
	if manager == "npx" && slices.ContainsFunc(args, func(a arg) bool { return a.is("--no-install", "--no", "--offline") }) {
		return finding{}, false
	}
	if manager == "npx" {
		if tool, _ := firstOperand(args, []string{"-p", "--package", "-c", "--call"}); tool != nil && !tool.dynamic {
			bin := strings.SplitN(strings.TrimPrefix(tool.text, "@"), "@", 2)[0]
			bin = bin[strings.LastIndexByte(bin, '/')+1:]
			return found("npx fetches "+tool.text+" from the registry unless the project has it",
				"If the project has it installed, run node_modules/.bin/"+bin+" (or npx --no-install "+tool.text+") instead.")
		}
	}
	return found(manager + " installs (and runs) packages from a registry")
}

// checkCpan judges cpan: any operand is a module to install.
func checkCpan(_ string, args []arg) (finding, bool) {
	if _, ops := scanOptions(args, optionSpec{}); len(ops) > 0 {
		return found("cpan installs Perl modules")
	}
	return finding{}, false
}

// checkBareYarn judges yarn with no command; with one, its verb decides.
func checkBareYarn(manager string, args []arg) (finding, bool) {
	if verb, _ := firstOperand(args, installValueFlags("yarn")); verb == nil {
		return found("yarn with no command installs the project's packages")
	}
	return checkInstallVerb(manager, args)
}

// checkDpkg judges dpkg's install and remove modes.
func checkDpkg(_ string, args []arg) (finding, bool) {
	if _, ok := findOption(args, "-i", "--install", "-r", "--remove", "-P", "--purge", "--unpack", "--configure"); ok {
		return found("dpkg installs or removes packages")
	}
	return finding{}, false
}

// checkPacman judges pacman and its helpers: -S, -R and -U, alone or in a
// cluster, and their long forms.
func checkPacman(manager string, args []arg) (finding, bool) {
	for _, a := range args {
		if !a.dynamic && (len(a.text) > 1 && a.text[0] == '-' && a.text[1] != '-' && strings.ContainsAny(a.text[1:2], "SRU") ||
			a.is("--sync", "--remove", "--upgrade")) {
			return found(manager + " " + a.text + " installs or removes packages")
		}
	}
	return finding{}, false
}

// checkNixEnv judges nix-env's install, uninstall and upgrade modes.
func checkNixEnv(_ string, args []arg) (finding, bool) {
	if _, ok := findOption(args, "-i", "--install", "-e", "--uninstall", "-u", "--upgrade"); ok {
		return found("nix-env installs or removes packages")
	}
	return finding{}, false
}

// checkInstallVerb judges a package manager by its subcommand: one of its
// install verbs (and, for a group, the second word) installs, upgrades or
// removes software.
func checkInstallVerb(manager string, args []arg) (finding, bool) {
	verbs := installVerbs(manager)
	if verbs == nil {
		return finding{}, false
	}
	verb, rest := firstOperand(args, installValueFlags(manager))
	switch {
	case verb == nil:
		return finding{}, false
	case verb.dynamic:
		return found(manager + "'s subcommand is only known at run time")
	}
	if f, ok, handled := ownInstallVerb(manager, *verb, rest); handled {
		return f, ok
	}
	if onlyPrintsPackages(manager, rest) || !slices.Contains(verbs, verb.text) {
		return finding{}, false
	}
	if subs := installSubVerbs(manager, verb.text); subs != nil {
		sub, _ := firstOperand(rest, nil)
		if sub == nil || !sub.dynamic && !slices.Contains(subs, sub.text) {
			return finding{}, false
		}
	}
	return found(manager + " " + verb.text + " installs, upgrades or removes software")
}

// ownInstallVerb judges the subcommands with rules of their own (go run,
// nix shell, npm exec --no-install, dotnet add package); handled reports
// one.
func ownInstallVerb(manager string, verb arg, rest []arg) (f finding, ok, handled bool) {
	switch {
	case manager == "go" && verb.is("run"):
		f, ok = checkGoRun(rest)
	case manager == "nix" && verb.is("shell", "run", "develop"):
		for _, a := range rest {
			if a.dynamic || !strings.HasPrefix(a.text, "-") && !strings.HasPrefix(a.text, ".") && !strings.HasPrefix(a.text, "/") {
				f, ok = found("nix " + verb.text + " " + a.text + " fetches and installs packages")
				break
			}
		}
	case manager == "npm" && verb.is("exec", "x") && slices.ContainsFunc(rest, func(a arg) bool { return a.is("--no-install", "--no", "--offline") }):
	case manager == "dotnet" && verb.is("add") && slices.ContainsFunc(rest, func(a arg) bool { return a.is("package") || a.dynamic }):
		f, ok = found("dotnet add package installs a NuGet package") // the project may come first: dotnet add app.csproj package x
	default:
		return finding{}, false, false
	}
	return f, ok, true
}

// onlyPrintsPackages reports the forms that list or pretend: pyenv
// install --list lists versions; brew install/autoremove -n only says
// what it would do.
func onlyPrintsPackages(manager string, rest []arg) bool {
	return slices.ContainsFunc(rest, func(a arg) bool { return a.is("--list") || a.is("-l") && strings.HasSuffix(manager, "env") }) ||
		manager == "brew" && slices.ContainsFunc(rest, func(a arg) bool { return a.is("-n", "--dry-run") })
}

// checkGoRun judges go run: a package@version is fetched and run.
func checkGoRun(rest []arg) (finding, bool) {
	for _, a := range rest {
		if !a.dynamic && !strings.HasPrefix(a.text, "-") && strings.Contains(a.text, "@") {
			return found("go run " + a.text + " fetches and runs a module")
		}
	}
	return finding{}, false
}

// installSubVerbs lists, for a verb that is a group (rustup toolchain,
// nix profile), the second words that install or remove; nil when the
// verb alone does.
func installSubVerbs(manager, verb string) []string {
	switch manager + " " + verb {
	case "nix profile":
		return []string{"install", "add", "remove", "upgrade"}
	case "hatch env":
		return []string{"create"}
	case "rustup toolchain", "rustup target", "rustup component":
		return []string{"install", "add", "remove", "uninstall"}
	case "rustup self":
		return []string{"update", "uninstall"}
	case "mise plugin", "mise plugins", "asdf plugin", "rtx plugin", "rtx plugins":
		return []string{"add", "install", "i", "update", "upgrade", "uninstall", "remove", "rm"}
	case "conda env", "mamba env", "micromamba env":
		return []string{"create", "update", "remove"}
	case "poetry self":
		return []string{"add", "install", "update", "remove", "sync", "lock"}
	case "pixi global":
		return []string{"install", "add", "remove", "upgrade", "upgrade-all", "sync", "update", "uninstall"}
	case "dnf group", "yum group", "zypper group":
		return []string{"install", "remove", "upgrade", "mark"}
	case "yarn global":
		return []string{"add", "remove", "upgrade"}
	}
	return toolManagerSubVerbs[manager+" "+verb]
}

// checkUv judges uv: uv pip install/sync/uninstall, add, remove, sync,
// tool install/run/upgrade, self update, python install, and uv run with
// --with (which installs what it names).
func checkUv(args []arg) (finding, bool) {
	verb, rest := firstOperand(args, []string{"--directory", "--project", "--cache-dir", "--config-file", "--color"})
	if verb == nil {
		return finding{}, false
	}
	sub, _ := firstOperand(rest, nil)
	subIs := func(vals ...string) bool { return sub != nil && (sub.dynamic || sub.is(vals...)) }
	switch {
	case verb.dynamic:
		return found("uv's subcommand is only known at run time")
	case verb.is("add", "remove", "sync"):
		return found("uv " + verb.text + " installs or removes packages")
	case verb.is("pip") && subIs("install", "uninstall", "sync"),
		verb.is("tool") && subIs("install", "run", "upgrade", "uninstall"),
		verb.is("self") && subIs("update"),
		verb.is("python") && subIs("install", "uninstall"):
		return found("uv " + verb.text + " " + sub.text + " installs or removes software")
	case verb.is("lock") && hasUpgrade(rest):
		return found("uv lock --upgrade moves the project to newer packages")
	case verb.is("run"):
		for _, a := range rest {
			if a.dynamic {
				continue
			}
			if name, _, _ := strings.Cut(a.text, "="); name == "--with" || name == "--with-requirements" || name == "--with-editable" {
				return found("uv run " + name + " installs packages")
			}
		}
	}
	return finding{}, false
}

// checkOperandInstalls judges managers whose operands are packages to
// install or remove (emerge, pkg_add): any operand, unless emerge only
// pretends, searches or prints information.
func checkOperandInstalls(manager string, args []arg) (finding, bool) {
	opts, ops := scanOptions(args, optionSpec{})
	if len(ops) == 0 && !has(opts, "--sync", "-u", "--update", "-C", "--unmerge", "--depclean", "-c") {
		return finding{}, false
	}
	if manager == "emerge" && has(opts, "-p", "--pretend", "-s", "--search", "-S", "--searchdesc", "--info", "-h", "--help") {
		return finding{}, false
	}
	return found(manager + " installs or removes packages")
}

// hasUpgrade reports uv's --upgrade, --upgrade-package, -U or -P.
func hasUpgrade(args []arg) bool {
	for _, a := range args {
		name, _, _ := strings.Cut(a.text, "=")
		if !a.dynamic && (name == "--upgrade" || name == "--upgrade-package" || a.is("-U", "-P") || strings.HasPrefix(a.text, "-P")) {
			return true
		}
	}
	return false
}

// checkRpm judges rpm: install, upgrade, freshen and erase modes; -q
// queries are allowed even with -i (info).
func checkRpm(args []arg) (finding, bool) {
	for _, a := range args {
		if a.dynamic || !strings.HasPrefix(a.text, "-") {
			continue
		}
		if a.is("--install", "--upgrade", "--freshen", "--erase", "--reinstall") {
			return found("rpm " + a.text + " installs or removes packages")
		}
		if strings.HasPrefix(a.text, "--") || strings.Contains(a.text, "q") {
			continue
		}
		if strings.ContainsAny(a.text[1:], "iUFe") {
			return found("rpm " + a.text + " installs or removes packages")
		}
	}
	return finding{}, false
}

// findOption finds an option given alone or (short ones) in a cluster.
func findOption(args []arg, names ...string) (string, bool) {
	opts, _ := scanOptions(args, optionSpec{})
	for _, o := range opts {
		if slices.Contains(names, o.name) {
			return o.name, true
		}
	}
	return "", false
}

// checkGhExtension judges gh extension install/upgrade/exec, which fetch
// and run code from GitHub.
func checkGhExtension(_ string, args []arg) (finding, bool) {
	group, verb, _ := ghWords(args)
	if group != nil && group.is("extension", "extensions", "ext") && verb != nil && (verb.dynamic || verb.is("install", "upgrade", "exec", "remove")) {
		return found("gh extension " + verb.text + " installs, runs or removes code from GitHub")
	}
	return finding{}, false
}
