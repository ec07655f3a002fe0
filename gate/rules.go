package gate

import "strings"

// Default rule names. The checks that report them live in the check_*.go files.
const (
	ruleGhWrite          = "gh-write"
	ruleGhCredentials    = "gh-credentials"
	ruleGitRemote        = "git-remote"
	ruleGitForcePush     = "git-force-push"
	ruleGitHistory       = "git-history"
	rulePackageInstall   = "package-install"
	ruleDownloadExec     = "download-exec"
	ruleRecursiveDelete  = "recursive-delete"
	ruleRecursiveChmod   = "recursive-chmod"
	ruleSudo             = "sudo"
	ruleDiskWrite        = "disk-write"
	ruleSQLDrop          = "sql-drop"
	ruleTerraformDestroy = "terraform-destroy"
	ruleShutdown         = "shutdown"
	ruleForkBomb         = "fork-bomb"
	ruleSecretRead       = "secret-read"
)

// Rules that are not configurable: they say the command could not be judged.
const (
	ruleParse   = "parse"   // the shell cannot parse it
	ruleDynamic = "dynamic" // its command or code is only known at run time
	ruleLimit   = "limit"   // too large or too deeply nested to judge
)

// RuleInfo describes a default rule, for `policy` and the README.
type RuleInfo struct {
	Name        string
	Verdict     Verdict // the verdict when the configuration does not change it
	Description string
}

// DefaultRules lists the default rules in the order they are documented.
func DefaultRules() []RuleInfo {
	return []RuleInfo{
		{ruleGhWrite, Deny, "gh commands that change GitHub: issue/pr comment, close, edit, reopen, create, delete, transfer, merge, review, lock, pin…; " +
			"release, repo, label, gist, variable, workflow, run, cache, project and codespace mutations; gh alias set; " +
			"gh api with a method other than GET (-X/--method) or with fields (-f/-F/--field/--raw-field/--input, which make it POST), " +
			"except a graphql query that is not a mutation; curl, wget and httpie requests to GitHub's API other than GET"},
		{ruleGhCredentials, Deny, "gh commands that handle credentials: gh auth login/logout/refresh/token/setup-git/switch, " +
			"gh auth status --show-token, every gh secret command, gh ssh-key and gpg-key add/delete"},
		{ruleGitRemote, Deny, "git commands that publish or take in shared history: push, pull, send-email, svn dcommit, p4 submit " +
			"(fetch and clone only add local copies and are allowed)"},
		{ruleGitForcePush, Deny, "git push --force, -f, --force-with-lease, --force-if-includes, --mirror, --delete, --prune, " +
			"+refspec and :branch; kept apart from git-remote so that confirming pushes never confirms a force push"},
		{ruleGitHistory, Deny, "git commands that rewrite history or discard work: commit, reset (reset --hard above all), rebase, checkout, " +
			"switch, restore, merge, cherry-pick, revert, am, stash (but stash list/show), clean (but clean -n), branch -d/-D/-m/-f, tag -d/-f, " +
			"filter-branch, filter-repo, update-ref, replace, prune, gc --prune, reflog expire/delete, bisect (but bisect log/view), " +
			"symbolic-ref writes, gh pr checkout; read-only commands such as log, status, diff, show, blame and grep are allowed"},
		{rulePackageInstall, Deny, "installing or removing software: pip/pip3/python -m pip install|uninstall, pipx, uv pip/add/remove/sync/tool, uvx, uv run --with, " +
			"poetry add/install/update/remove/sync, pixi install/add/update/remove/global/exec, conda/mamba/micromamba install/create/update/remove, " +
			"npm/pnpm/yarn/bun install/i/add/ci/update/remove/link, bare yarn, npx/pnpx/bunx/npm exec (unless --no-install), gem, bundle install, " +
			"cargo install/add, go install/get, go run pkg@version, apt/apt-get/dpkg/rpm/dnf/yum/zypper/apk/brew/pacman/port/snap/flatpak/nix-env, " +
			"composer, cpan, luarocks, rustup, mise/asdf install, gh extension install"},
		{ruleDownloadExec, Deny, "running what was just downloaded: curl/wget/fetch output piped into a shell or interpreter (curl … | sh, wget -O- … | python3), " +
			"bash <(curl …), sh -c \"$(curl …)\", python -c \"$(curl …)\", eval \"$(curl …)\", source <(curl …), sh <<< \"$(curl …)\""},
		{ruleRecursiveDelete, Deny, "recursive deletes (rm -r in any spelling, with or without -f; find … -delete or -exec rm; rsync --delete; shred/srm/wipe) " +
			"whose target is /, the home directory (~, $HOME), an absolute path that is not inside the workspace, a writable path or a temporary directory, " +
			"a path that climbs out with .., everything in the current directory (*, .*, .), or a path only known at run time; " +
			"relative paths such as rm -rf build/ are allowed, unless an earlier cd went to one of those places"},
		{ruleRecursiveChmod, Deny, "chmod, chown, chgrp and setfacl -R on the same targets recursive-delete guards"},
		{ruleSudo, Deny, "privilege escalation: sudo, sudoedit, doas, su, runuser, pkexec, run0 (the command they run is judged too)"},
		{ruleDiskWrite, Deny, "writing to disk devices (/dev/sd*, nvme*, vd*, xvd*, hd*, mmcblk*, disk*, mapper/*, dm-*, md*, loop*, mem, kmem, port): dd of=, redirections, tee, cp, mv, install, shred; " +
			"mkfs*, mke2fs, mkswap, wipefs, blkdiscard, fdisk/sfdisk/gdisk/sgdisk/cfdisk/parted (but -l/--list), nvme format/sanitize"},
		{ruleSQLDrop, Deny, "DROP TABLE/DATABASE/SCHEMA or TRUNCATE (any case) in the arguments, here-documents or here-strings of a SQL client " +
			"(psql, mysql, mariadb, sqlite3, duckdb, clickhouse, sqlcmd, cockroach, usql, pgcli, mycli, litecli) or in a pipeline feeding one; dropdb; mysqladmin drop"},
		{ruleTerraformDestroy, Deny, "destroying infrastructure: terraform/tofu/terragrunt destroy, apply -destroy, state rm, workspace delete; " +
			"pulumi destroy/down/stack rm; cdk destroy; kubectl delete; helm uninstall/delete"},
		{ruleShutdown, Deny, "stopping the machine or every process: shutdown, reboot, halt, poweroff, init/telinit 0|1|6, " +
			"systemctl poweroff/reboot/halt/kexec/suspend/hibernate/rescue/emergency, kill of pid 1 or -1, killall5"},
		{ruleForkBomb, Deny, "a shell function that starts itself more than once or in the background, such as :(){ :|:& };:"},
		{ruleSecretRead, Deny, "naming a credential file or directory under a home directory (~, $HOME, /root, /home/*, /Users/*) in an argument or redirection: " +
			strings.Join(homeCredentialPaths(), ", ") + " (the built-in credential list, which the policy makes unreadable; echo and printf are exempt: their arguments are data)"},
	}
}

// ruleNames lists the default rules' names in documented order.
func ruleNames() []string {
	var names []string
	for _, r := range DefaultRules() {
		names = append(names, r.Name)
	}
	return names
}
