package profiles

import "strings"

// credentialWords are `_`-separated name components that mark a variable as a
// credential wherever they appear. Matching whole components (not substrings)
// lets TOKENIZER_DIR and MONKEY through while GITHUB_TOKEN is caught.
var credentialWords = map[string]bool{
	"KEY": true, "KEYS": true, "APIKEY": true, "TOKEN": true, "TOKENS": true,
	"SECRET": true, "SECRETS": true, "PASSWORD": true, "PASSWD": true, "PASS": true,
	"PASSPHRASE": true, "CREDENTIAL": true, "CREDENTIALS": true,
	"CREDS": true, "PRIVATE": true, "COOKIE": true, "COOKIES": true, "PAT": true,
	"AUTH": true, "OAUTH": true, "BEARER": true, "SESSION": true, "DSN": true,
	"SIGNATURE": true, "CERT": true,
}

// LooksLikeCredential reports whether an environment variable name looks like
// it holds a secret. It returns the reason, for `policy` and `doctor` output.
func LooksLikeCredential(name string) (bool, string) {
	upper := strings.ToUpper(name)
	parts := strings.Split(upper, "_")
	for _, p := range parts {
		if credentialWords[p] {
			return true, "name contains credential word " + p
		}
	}
	// AUTHORIZATION, AUTHTOKEN, ...: a leading AUTH* component.
	if strings.HasPrefix(parts[0], "AUTH") {
		return true, "name starts with AUTH"
	}
	return false, ""
}
