package gate

import (
	"slices"
	"strings"
)

// checkHTTP judges HTTP clients writing to GitHub's API: curl, wget and
// httpie are another way to comment on or close an issue.
func checkHTTP(l layer) (finding, bool) {
	args := l.args[1:]
	if !slices.ContainsFunc(args, func(a arg) bool { return namesGitHubAPI(a.text) }) {
		return finding{}, false
	}
	if method := httpMethod(l.name, args); method != "GET" && method != "HEAD" {
		return found(l.name + " " + method + " to GitHub's API changes GitHub")
	}
	return finding{}, false
}

func namesGitHubAPI(text string) bool {
	t := strings.ToLower(text)
	return strings.Contains(t, "api.github.com") || strings.Contains(t, "uploads.github.com") || strings.Contains(t, "/api/v3/")
}

// httpMethod is the method a request will use; "DYNAMIC" when an option
// only known at run time could change it.
func httpMethod(name string, args []arg) string {
	switch name {
	case "curl":
		opts, _ := scanOptions(args, optionSpec{values: "XdFTHuoAeEKbcwrmyY", longValues: []string{
			"request", "data", "data-raw", "data-binary", "data-urlencode", "data-ascii", "json", "form", "form-string",
			"upload-file", "header", "user", "output", "user-agent", "referer", "cookie", "cookie-jar", "config",
			"max-time", "connect-timeout", "url", "retry"}})
		method := "GET"
		if has(opts, "-d", "-F", "--data", "--data-raw", "--data-binary", "--data-urlencode", "--data-ascii", "--json", "--form", "--form-string") {
			method = "POST"
		}
		if has(opts, "-T", "--upload-file") {
			method = "PUT"
		}
		if m := values(opts, "-X", "--request"); len(m) > 0 {
			method = methodName(m[len(m)-1])
		}
		if mayHideOption(args) {
			return "DYNAMIC"
		}
		return method
	case "wget":
		opts, _ := scanOptions(args, optionSpec{values: "OoaeUt", longValues: []string{"method", "post-data", "post-file", "body-data", "body-file", "header"}})
		if m := values(opts, "--method"); len(m) > 0 {
			return methodName(m[len(m)-1])
		}
		if has(opts, "--post-data", "--post-file", "--body-data", "--body-file") {
			return "POST"
		}
		return "GET"
	default: // httpie and xh: [METHOD] URL [items]; data items make it POST
		_, ops := scanOptions(args, optionSpec{values: "aAvo", longValues: []string{"auth", "auth-type", "output", "session", "verify", "cert", "timeout"}})
		if len(ops) > 0 && !ops[0].dynamic && ops[0].text != "" && strings.ToUpper(ops[0].text) == ops[0].text && !strings.ContainsAny(ops[0].text, "/.:") {
			return ops[0].text
		}
		for _, a := range ops {
			if a.dynamic {
				return "DYNAMIC"
			}
			if i := strings.IndexAny(a.text, "=@"); i > 0 && !strings.Contains(a.text, "==") && !namesGitHubAPI(a.text[:i]) {
				return "POST"
			}
		}
		return "GET"
	}
}

func methodName(a arg) string {
	if a.dynamic {
		return "DYNAMIC"
	}
	return strings.ToUpper(strings.TrimPrefix(a.text, "="))
}
