package hints

import (
	"fmt"
	"path/filepath"
	"strings"
)

// networkTools are commands that reach the network, by program and (when
// the program does more) subcommand: with the network off they hang on
// retries until the timeout, often printing nothing.
var networkTools = map[string][]string{
	"npm":     {"view", "info", "show", "v", "install", "i", "ci", "add", "update", "outdated", "audit", "publish", "search", "exec"},
	"npx":     nil,
	"yarn":    {"add", "install", "info", "upgrade", "dlx"},
	"pnpm":    {"add", "install", "i", "view", "info", "update", "dlx"},
	"pip":     {"install", "download", "index", "search"},
	"pip3":    {"install", "download", "index", "search"},
	"go":      {"get", "install", "mod"},
	"curl":    nil,
	"wget":    nil,
	"git":     {"clone", "fetch", "pull", "push", "ls-remote", "submodule"},
	"gh":      nil,
	"cargo":   {"install", "fetch", "update", "search"},
	"gem":     {"install", "fetch", "update"},
	"apt":     {"update", "install"},
	"apt-get": {"update", "install"},
}

// networkHintFor: a failure the output shows is a network one, or a
// command that timed out was trying to reach the network (the output
// says so, or it is a network tool).
func networkHintFor(run Run) string {
	if h := depFetchHint(run.Output); h != "" {
		return h
	}
	if patterns().networkRe.MatchString(run.Output) {
		if run.TimedOut {
			return "the command timed out while it was trying to reach the network: " + networkHint
		}
		return networkHint
	}
	if !run.TimedOut {
		return ""
	}
	if tool := networkTool(run.Argv); tool != "" {
		return fmt.Sprintf("the command timed out, probably waiting for the network (%s reaches it): %s", tool, networkHint)
	}
	return ""
}

// failedLookups reads the names whose lookup the output shows failing:
// local says one is the loopback's own name (localhost, or a name under
// .localhost, RFC 6761), other that one is not.
func failedLookups(out string) (local, other bool) {
	for _, re := range patterns().failedNameRes {
		for _, m := range re.FindAllStringSubmatch(out, 8) {
			if isLocalName(m[1]) {
				local = true
			} else {
				other = true
			}
		}
	}
	return local, other
}

// isLocalName: the loopback's own names, which resolve through /etc/hosts
// with no DNS.
func isLocalName(name string) bool {
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	switch name {
	case "localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback":
		return true
	}
	return strings.HasSuffix(name, ".localhost")
}

// networkTool names the network tool argv runs ("npm view"), looking into
// a `sh -c` script's words too; "" when it runs none.
func networkTool(argv []string) string {
	words := argv
	if len(argv) >= 3 && isShell(argv[0]) && argv[1] == "-c" {
		words = strings.FieldsFunc(argv[2], func(r rune) bool {
			return r == ' ' || r == '\t' || r == '\n' || r == ';' || r == '&' || r == '|' || r == '(' || r == ')'
		})
	}
	for i, w := range words {
		name := filepath.Base(w)
		subs, ok := networkTools[name]
		if !ok {
			// python -m pip install ...
			if (strings.HasPrefix(name, "python") && i+2 < len(words) && words[i+1] == "-m") && networkTools[words[i+2]] != nil {
				name, i = words[i+2], i+2
				subs = networkTools[name]
			} else {
				continue
			}
		}
		if subs == nil {
			return name
		}
		if sub := nextWord(words[i+1:]); contains(subs, sub) {
			return name + " " + sub
		}
	}
	return ""
}

// nextWord is the first word that is not a flag (npm --silent view).
func nextWord(ws []string) string {
	for _, w := range ws {
		if !strings.HasPrefix(w, "-") {
			return w
		}
	}
	return ""
}

func isShell(s string) bool {
	switch filepath.Base(s) {
	case "sh", "bash", "dash", "zsh":
		return true
	}
	return false
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
