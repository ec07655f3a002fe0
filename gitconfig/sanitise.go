package gitconfig

import (
	"fmt"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/output"
)

// Removed is an entry left out of the sanitised view, or one whose value
// was changed: its key, line and why, never its value.
type Removed struct {
	Key  string
	Line int
	Why  string
}

func (r Removed) String() string { return fmt.Sprintf("%s (line %d): %s", r.Key, r.Line, r.Why) }

// Sanitise returns the entries the sandbox may see and what was taken out:
//   - every credential.* entry (helpers, usernames, stores);
//   - http.*.extraheader and http.*.cookiefile (actions/checkout's
//     persisted token is an "AUTHORIZATION: basic …" extraheader);
//   - every entry of a section whose subsection is a URL with userinfo
//     ([url "https://x:ghs_…@github.com/"] insteadOf, [http "https://u:p@…"]);
//   - an entry whose value holds a token's shape (output.DefaultRules);
//   - and, kept, a URL value with the userinfo removed (remote.*.url =
//     https://x-access-token:…@github.com/o/r becomes https://github.com/o/r;
//     ssh's bare user name, ssh://git@host, is kept).
func Sanitise(entries []Entry) (kept []Entry, removed []Removed) {
	tokens := output.NewRedactor(nil, output.DefaultRules())
	for _, e := range entries {
		why := ""
		switch {
		case e.Section == "credential":
			why = "a credential helper or its settings"
		case e.Section == "http" && (e.Name == "extraheader" || e.Name == "cookiefile"):
			why = "an HTTP header or cookie file sent to the remote (a persisted token)"
		case hasUserinfo(e.Subsection):
			why = "a section named by a URL that carries a user name or password"
		case !e.NoValue && tokens.Redact(e.Value) != e.Value:
			why = "a value with a token's shape"
		}
		if why != "" {
			removed = append(removed, Removed{Key: e.Key(), Line: e.Line, Why: why})
			continue
		}
		if !e.NoValue {
			if clean, ok := stripUserinfo(e.Value); ok {
				e.Value = clean
				removed = append(removed, Removed{Key: e.Key(), Line: e.Line, Why: "the user name or password in its URL (the URL is kept without it)"})
			}
		}
		kept = append(kept, e)
	}
	return kept, removed
}

// urlUserinfo finds scheme://userinfo@ in s: the start and end of the
// userinfo (end is the '@'), ok false without one.
func urlUserinfo(s string) (start, end int, scheme string, ok bool) {
	i := strings.Index(s, "://")
	if i <= 0 {
		return 0, 0, "", false
	}
	start = i + 3
	auth := s[start:]
	if j := strings.IndexAny(auth, "/?#"); j >= 0 {
		auth = auth[:j]
	}
	at := strings.LastIndexByte(auth, '@')
	if at < 0 {
		return 0, 0, "", false
	}
	return start, start + at, strings.ToLower(s[:i]), true
}

// hasUserinfo: s is a URL with any userinfo.
func hasUserinfo(s string) bool {
	_, _, _, ok := urlUserinfo(s)
	return ok
}

// stripUserinfo removes a URL's userinfo, keeping ssh's bare user name
// (no password: it names the account, it authenticates nothing).
func stripUserinfo(s string) (string, bool) {
	start, end, scheme, ok := urlUserinfo(s)
	if !ok {
		return s, false
	}
	if (scheme == "ssh" || scheme == "git+ssh" || scheme == "ssh+git") && !strings.Contains(s[start:end], ":") {
		return s, false
	}
	return s[:start] + s[end+1:], true
}
