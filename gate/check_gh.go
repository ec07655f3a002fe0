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

// ghCall is a gh command line: its group (issue, pr, api…), the verb
// after it and the rest.
type ghCall struct {
	group, verb *arg
	rest        []arg
}

// verbIs reports whether the verb is one of vals or only known at run time.
func (g ghCall) verbIs(vals ...string) bool {
	return g.verb != nil && (g.verb.dynamic || slices.Contains(vals, g.verb.text))
}

func parseGh(l layer) ghCall {
	group, verb, rest := ghWords(l.args[1:])
	return ghCall{group, verb, rest}
}

// ghWriteTools are gh-write's tools: gh, and HTTP clients calling GitHub's
// API.
func ghWriteTools() map[string]ruleCheck {
	m := each(httpToGitHub, "curl", "wget", "http", "https", "xh", "xhs")
	m["gh"] = checkGhWrite
	return m
}

func httpToGitHub(c Invocation) (finding, bool) { return checkHTTP(c.layer) }

// checkGhWrite judges gh commands that change GitHub.
func checkGhWrite(c Invocation) (finding, bool) {
	g := parseGh(c.layer)
	switch {
	case g.group == nil:
	case g.group.dynamic:
		return found("the gh command is only known at run time")
	case g.group.is("api"):
		apiArgs := c.args[1:]
		if i := slices.IndexFunc(apiArgs, func(a arg) bool { return a.is("api") }); i >= 0 {
			apiArgs = apiArgs[i+1:]
		}
		return checkGhAPI(apiArgs)
	case g.verbIs(ghMutations(g.group.text)...):
		return found("gh " + g.group.text + " " + verbText(g.verb) + " changes GitHub")
	}
	return finding{}, false
}

// checkGhCredentials judges gh commands that print or change credentials.
func checkGhCredentials(c Invocation) (finding, bool) {
	g := parseGh(c.layer)
	if g.group == nil || g.group.dynamic {
		return finding{}, false
	}
	switch grp := g.group.text; grp {
	case "auth":
		switch {
		case g.verbIs("login", "logout", "refresh", "token", "setup-git", "switch"):
			return found("gh auth " + verbText(g.verb) + " handles the GitHub credentials")
		case g.verbIs("status") && slices.ContainsFunc(g.rest, func(a arg) bool { return a.is("-t", "--show-token") || a.dynamic }):
			return found("gh auth status --show-token prints the GitHub token")
		}
	case "secret":
		return found("gh secret handles repository secrets")
	case "ssh-key", "gpg-key":
		if g.verbIs("add", "delete") {
			return found("gh " + grp + " " + verbText(g.verb) + " changes the account's keys")
		}
	}
	return finding{}, false
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
func checkGhAPI(args []arg) (finding, bool) {
	opts, ops := scanOptions(args, optionSpec{values: "XfFHpqt", longValues: []string{
		"method", "field", "raw-field", "header", "preview", "jq", "template", "input", "hostname", "cache"}})
	if mayHideOption(args) {
		return found("gh api has an argument only known at run time, which could make it write")
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
			return found("gh api's method is only known at run time")
		}
		method = strings.ToUpper(strings.TrimPrefix(last.text, "="))
	}
	if method == "GET" || method == "HEAD" {
		return finding{}, false
	}
	if len(ops) > 0 && ops[0].is("graphql") && method == "POST" && !input && graphqlReads(fields) {
		return finding{}, false
	}
	return found("gh api with method " + method + " changes GitHub")
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
