package gate

import (
	"slices"
	"strings"
)

// credentialTools are credential-helper's tools and their checks: the
// commands that print stored passwords and tokens, and the CLIs that print
// the credentials they are logged in with (or mint from them) without
// naming a credential file. Secrets a service stores for the project (aws
// secretsmanager, vault read, key vault) are the project's data, read
// with those credentials: other guards allow them, and so does the gate.
func credentialTools() map[string]ruleCheck {
	m := map[string]ruleCheck{"git": gitCredentialHelper}
	for fam, form := range map[string]credentialForm{
		"security": keychainRead, "secret-tool": secretToolRead, "pass": passShow, "gopass": passShow,
		"op": passwordManager, "bw": passwordManager, "lpass": passwordManager,
		"aws": awsCredential, "gcloud": gcloudToken, "az": azToken, "gpg": gpgSecretExport, "kubectl": kubectlCredential,
		"heroku": herokuToken, "docker-credential": dockerCredential, "vault": vaultToken, "keyring": keyringGet,
		"kwallet-query": kwalletRead,
	} {
		m[fam] = credentialCheck(form)
	}
	return m
}

// gitCredentialHelper judges git credential fill and the credential
// helpers' get, spelled git …
func gitCredentialHelper(c Invocation) (finding, bool) {
	if c.name == "git" {
		return gitCredential(c.layer)
	}
	return finding{}, false
}

// credentialLine is a credential tool's arguments and, of them, its
// operands.
type credentialLine struct{ args, ops []arg }

// at reports whether operand i is one of vals, or only known at run time.
func (l credentialLine) at(i int, vals ...string) bool {
	return len(l.ops) > i && (l.ops[i].dynamic || l.ops[i].is(vals...))
}

// flag reports one of the named options (--name or --name=value).
func (l credentialLine) flag(names ...string) bool {
	return slices.ContainsFunc(l.args, func(a arg) bool {
		name, _, _ := strings.Cut(a.text, "=")
		return !a.dynamic && slices.Contains(names, name)
	})
}

// credentialForm says why a command line prints a credential, after the
// command's name; "" for the forms that print none.
type credentialForm func(l credentialLine) string

func credentialCheck(form credentialForm) ruleCheck {
	return func(c Invocation) (finding, bool) {
		_, ops := scanOptions(c.args[1:], optionSpec{})
		if why := form(credentialLine{c.args[1:], ops}); why != "" {
			return found(c.name + " " + why)
		}
		return finding{}, false
	}
}

func keychainRead(l credentialLine) string {
	if l.at(0, "find-generic-password", "find-internet-password", "find-key", "dump-keychain", "export", "unlock-keychain") {
		return l.ops[0].text + " reads the keychain"
	}
	return ""
}

func secretToolRead(l credentialLine) string {
	if l.at(0, "lookup", "search") {
		return l.ops[0].text + " prints stored secrets"
	}
	return ""
}

// passShow: only what prints a secret; listing, searching names, setting
// up, syncing and moving entries print none.
func passShow(l credentialLine) string {
	if len(l.ops) > 0 && !l.at(0, "ls", "list", "find", "search", "init", "git", "help", "version", "mounts", "new", "sync",
		"insert", "rm", "mv", "cp", "config", "setup", "clone", "recipients", "fsck", "templates", "update", "completion") {
		return "prints a stored password"
	}
	return ""
}

func passwordManager(l credentialLine) string {
	item := len(l.ops) > 1 && l.ops[0].is("item", "document") && (l.ops[1].dynamic || l.ops[1].is("get"))
	if item || l.at(0, "read", "get", "show", "export", "unlock", "inject", "run", "signin") {
		return l.ops[0].text + " reads a password manager"
	}
	return ""
}

// awsCredential: configure get of a key, export-credentials,
// get-login-password, sts session tokens.
func awsCredential(l credentialLine) string {
	ops := l.ops
	switch {
	case l.at(0, "configure") && l.at(1, "get") && len(ops) > 2 && (ops[2].dynamic || strings.Contains(ops[2].text, "secret") ||
		strings.Contains(ops[2].text, "key_id") || strings.Contains(ops[2].text, "token")):
		return "configure get prints a stored access key"
	case l.at(0, "configure") && l.at(1, "export-credentials"),
		l.at(0, "ecr", "ecr-public") && l.at(1, "get-login-password", "get-login", "get-authorization-token"),
		l.at(0, "codeartifact") && l.at(1, "get-authorization-token"),
		l.at(0, "sts") && l.at(1, "get-session-token", "get-federation-token"):
		return ops[0].text + " " + ops[1].text + " prints a credential"
	}
	return ""
}

// gcloudToken: gcloud auth print-*-token, config config-helper.
func gcloudToken(l credentialLine) string {
	for _, a := range l.ops {
		if !a.dynamic && strings.HasPrefix(a.text, "print-") && strings.HasSuffix(a.text, "-token") || a.is("config-helper") {
			return a.text + " prints a credential"
		}
	}
	return ""
}

func azToken(l credentialLine) string {
	if l.at(0, "account") && l.at(1, "get-access-token") || l.at(0, "acr") && l.at(1, "login") && l.flag("--expose-token") {
		return l.ops[0].text + " " + l.ops[1].text + " prints a credential"
	}
	return ""
}

func gpgSecretExport(l credentialLine) string {
	for _, a := range l.args {
		if !a.dynamic && strings.HasPrefix(a.text, "--export-secret") {
			return a.text + " prints private keys"
		}
	}
	return ""
}

func kubectlCredential(l credentialLine) string {
	if l.at(0, "config") && l.at(1, "view") && l.flag("--raw") || l.at(0, "create") && l.at(1, "token") {
		return l.ops[0].text + " " + l.ops[1].text + " prints cluster credentials"
	}
	return ""
}

func herokuToken(l credentialLine) string {
	if l.at(0, "auth:token", "authorizations:create") {
		return l.ops[0].text + " prints an API token"
	}
	return ""
}

func dockerCredential(l credentialLine) string {
	if l.at(0, "get", "list") {
		return l.ops[0].text + " prints registry credentials"
	}
	return ""
}

func vaultToken(l credentialLine) string {
	if l.at(0, "print") && l.at(1, "token") {
		return l.ops[0].text + " prints a secret or token"
	}
	return ""
}

func keyringGet(l credentialLine) string {
	if l.at(0, "get") {
		return "get prints a stored password"
	}
	return ""
}

func kwalletRead(l credentialLine) string {
	if l.flag("-r", "--read-password") {
		return "-r prints a stored password"
	}
	return ""
}
