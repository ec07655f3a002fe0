package gate

import (
	"slices"
	"strings"
)

// ghMutations lists, per gh command group, the subcommands that change
// GitHub.
func ghMutations(group string) []string {
	switch group {
	case "issue":
		return []string{"comment", "close", "create", "new", "delete", "edit", "lock", "unlock", "pin", "unpin", "reopen", "transfer", "develop"}
	case "pr":
		return []string{"comment", "close", "create", "new", "edit", "lock", "unlock", "merge", "ready", "reopen", "review", "update-branch", "revert"}
	case "release":
		return []string{"create", "new", "delete", "delete-asset", "edit", "upload"}
	case "repo":
		return []string{"archive", "unarchive", "create", "new", "delete", "edit", "fork", "rename", "sync", "deploy-key", "autolink"}
	case "label":
		return []string{"create", "edit", "delete", "clone"}
	case "gist":
		return []string{"create", "new", "edit", "delete", "rename"}
	case "variable":
		return []string{"set", "delete"}
	case "workflow":
		return []string{"run", "enable", "disable"}
	case "run":
		return []string{"rerun", "cancel", "delete"}
	case "cache":
		return []string{"delete"}
	case "project":
		return []string{"close", "copy", "create", "delete", "edit", "field-create", "field-delete", "item-add",
			"item-archive", "item-create", "item-delete", "item-edit", "link", "mark-template", "unlink"}
	case "codespace", "cs":
		return []string{"create", "delete", "edit", "rebuild", "stop", "ssh", "cp"}
	case "alias":
		return []string{"set", "import", "delete"}
	case "agent-task":
		return []string{"create"}
	}
	return nil
}

// ghWords finds gh's command group and subcommand, skipping flags and the
// values of -R/--repo.
func ghWords(args []arg) (group, verb *arg, rest []arg) {
	var found []*arg
	for i := 0; i < len(args) && len(found) < 2; i++ {
		a := args[i]
		switch {
		case a.is("-R", "--repo", "--hostname"):
			i++
		case !a.dynamic && strings.HasPrefix(a.text, "-"):
		default:
			found = append(found, &args[i])
			rest = args[i+1:]
		}
	}
	switch len(found) {
	case 2:
		return found[0], found[1], rest
	case 1:
		return found[0], nil, rest
	}
	return nil, nil, nil
}

func (j *judge) checkGh(l layer) {
	text := l.text()
	group, verb, rest := ghWords(l.args[1:])
	if group == nil {
		return
	}
	if group.dynamic {
		j.rule(ruleGhWrite, "the gh command is only known at run time", text)
		return
	}
	verbIs := func(vals ...string) bool { return verb != nil && (verb.dynamic || slices.Contains(vals, verb.text)) }
	switch g := group.text; g {
	case "api":
		apiArgs := l.args[1:]
		if i := slices.IndexFunc(apiArgs, func(a arg) bool { return a.is("api") }); i >= 0 {
			apiArgs = apiArgs[i+1:]
		}
		j.checkGhAPI(apiArgs, text)
	case "auth":
		switch {
		case verbIs("login", "logout", "refresh", "token", "setup-git", "switch"):
			j.rule(ruleGhCredentials, "gh auth "+verbText(verb)+" handles the GitHub credentials", text)
		case verbIs("status") && slices.ContainsFunc(rest, func(a arg) bool { return a.is("-t", "--show-token") || a.dynamic }):
			j.rule(ruleGhCredentials, "gh auth status --show-token prints the GitHub token", text)
		}
	case "secret":
		j.rule(ruleGhCredentials, "gh secret handles repository secrets", text)
	case "ssh-key", "gpg-key":
		if verbIs("add", "delete") {
			j.rule(ruleGhCredentials, "gh "+g+" "+verbText(verb)+" changes the account's keys", text)
		}
	case "extension", "extensions", "ext":
		if verbIs("install", "upgrade", "exec") {
			j.rule(rulePackageInstall, "gh extension "+verbText(verb)+" installs and runs code from GitHub", text)
		}
	case "pr":
		if verbIs("checkout", "co") {
			j.rule(ruleGitHistory, "gh pr checkout changes the checked-out branch", text)
			return
		}
		fallthrough
	default:
		if verbIs(ghMutations(g)...) {
			j.rule(ruleGhWrite, "gh "+g+" "+verbText(verb)+" changes GitHub", text)
		}
	}
}

func verbText(verb *arg) string {
	if verb == nil {
		return ""
	}
	return verb.text
}

// checkGhAPI judges gh api: GET (the default without fields) reads;
// another method, or fields or --input (which make it POST), write.
// A graphql call is a POST but reads unless its query is a mutation.
func (j *judge) checkGhAPI(args []arg, text string) {
	opts, ops := scanOptions(args, optionSpec{values: "XfFHpqt", longValues: []string{
		"method", "field", "raw-field", "header", "preview", "jq", "template", "input", "hostname", "cache"}})
	if mayHideOption(args) {
		j.rule(ruleGhWrite, "gh api has an argument only known at run time, which could make it write", text)
		return
	}
	fields := values(opts, "-f", "-F", "--field", "--raw-field")
	input := has(opts, "--input")
	method := "GET"
	if len(fields) > 0 || input {
		method = "POST"
	}
	if m := values(opts, "-X", "--method"); len(m) > 0 {
		last := m[len(m)-1]
		if last.dynamic {
			j.rule(ruleGhWrite, "gh api's method is only known at run time", text)
			return
		}
		method = strings.ToUpper(strings.TrimPrefix(last.text, "="))
	}
	if method == "GET" || method == "HEAD" {
		return
	}
	if len(ops) > 0 && ops[0].is("graphql") && method == "POST" && !input && graphqlReads(fields) {
		return
	}
	j.rule(ruleGhWrite, "gh api with method "+method+" changes GitHub", text)
}

// graphqlReads reports whether graphql fields are a plain query: literal,
// not read from a file, and no mutation.
func graphqlReads(fields []arg) bool {
	for _, f := range fields {
		if f.dynamic {
			return false
		}
		_, value, _ := strings.Cut(f.text, "=")
		if strings.HasPrefix(value, "@") || strings.Contains(strings.ToLower(value), "mutation") {
			return false
		}
	}
	return true
}
