package profiles

import (
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
)

// A name is screened by its parts: it is upper-cased and split at every
// character that is not a letter or a digit (`_` in practice). A part is a
// credential when it
//
//   - is a credential word (credentialWords), trailing digits ignored: KEY, KEY2;
//   - contains a credential substring (credentialSubstrings): APITOKEN, PGPASSWORD;
//   - starts with AUTH or OAUTH: AUTHORIZATION, OAUTH2;
//   - ends with a credential suffix (credentialSuffixes), trailing digits
//     ignored: GHPAT, SSHKEY, SENTRYDSN, BASICAUTH;
//
// unless the whole part is a known benign word (benignParts: TOKENIZER,
// MONKEY, AUTHOR, COMPAT, ...). Some credentials take two parts
// (credentialPhrases: DATABASE_URL, CONN_STR, HOOK_URL). Whole parts, prefixes and
// suffixes, never bare substrings, decide for short words such as KEY and
// PAT, so KEYBOARD_LAYOUT, XDG_RUNTIME_DIR and PATH pass.

// credentialWords are parts that mark a credential wherever they appear.
var credentialWords = map[string]bool{
	"KEY": true, "KEYS": true, "APIKEY": true, "TOKEN": true, "TOKENS": true,
	"SECRET": true, "SECRETS": true, "PASSWORD": true, "PASSWD": true, "PASS": true,
	"PASSPHRASE": true, "CREDENTIAL": true, "CREDENTIALS": true,
	"CREDS": true, "PRIVATE": true, "COOKIE": true, "COOKIES": true, "PAT": true,
	"AUTH": true, "OAUTH": true, "BEARER": true, "SESSION": true, "DSN": true,
	"SIGNATURE": true, "CERT": true,
	// A webhook URL is a credential; so are signing material, tokens named
	// by their format, and private key and certificate files.
	"WEBHOOK": true, "WEBHOOKS": true, "SIGNING": true, "HMAC": true, "JWT": true,
	"PEM": true, "P12": true, "PKCS12": true, "PFX": true, "KEYSTORE": true,
	"CERTIFICATE": true,
}

// credentialSubstrings mark a part that contains them anywhere. Longer and
// more specific first: the first match names the reason.
var credentialSubstrings = []string{
	"PRIVATEKEY", "PRIVKEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD",
	"PASSPHRASE", "CREDENTIAL", "COOKIE", "SESSION", "BEARER", "WEBHOOK", "KEYSTORE",
}

// credentialPrefixes mark a part that starts with them.
var credentialPrefixes = []string{"OAUTH", "AUTH"}

// credentialSuffixes mark a part that ends with them (trailing digits aside).
var credentialSuffixes = []string{"KEYS", "KEY", "PAT", "DSN", "AUTH", "PASS", "CREDS", "JWT", "PEM", "CERT"}

// benignParts are whole parts that contain a credential substring, prefix or
// suffix by accident of spelling.
var benignParts = map[string]bool{
	// TOKEN
	"TOKENIZER": true, "TOKENIZERS": true, "TOKENIZE": true, "TOKENIZED": true,
	"TOKENIZATION": true, "TIKTOKEN": true,
	// SECRET, COOKIE
	"SECRETARY": true, "COOKIECUTTER": true,
	// AUTH*
	"AUTHOR": true, "AUTHORS": true, "AUTHORED": true, "AUTHORING": true,
	"AUTHORITY": true, "AUTHORITIES": true,
	// *KEY, *KEYS
	"MONKEY": true, "MONKEYS": true, "DONKEY": true, "DONKEYS": true, "TURKEY": true,
	"HOCKEY": true, "WHISKEY": true, "JOCKEY": true, "TURNKEY": true, "LACKEY": true,
	"HOTKEY": true, "HOTKEYS": true, "LESSKEY": true,
	// *PAT
	"COMPAT": true,
	// *CERT
	"CONCERT": true,
	// *PASS
	"BYPASS": true, "COMPASS": true, "SURPASS": true, "TRESPASS": true,
	"OVERPASS": true, "UNDERPASS": true, "ENCOMPASS": true,
}

// credentialPhrases are credentials spelled over consecutive parts, or run
// together in one part.
var credentialPhrases = [][]string{
	{"DATABASE", "URL"}, {"DATABASE", "URI"}, {"DB", "URL"}, {"DB", "URI"},
	{"CONNECTION", "STRING"}, {"CONN", "STRING"}, {"CONN", "STR"},
	{"HOOK", "URL"}, {"HOOK", "URI"}, {"HOOKS", "URL"},
	{"SIGNED", "URL"}, {"PRESIGNED", "URL"},
}

// LooksLikeCredential reports whether an environment variable name looks like
// it holds a secret. It returns the reason, for `policy` and `doctor` output,
// e.g. "name part APITOKEN contains TOKEN".
func LooksLikeCredential(name string) (bool, string) {
	parts := strings.FieldsFunc(strings.ToUpper(name), func(r rune) bool {
		return !(r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
	for _, ph := range credentialPhrases {
		for i := range parts {
			if runTogether(parts[i], ph) || i+len(ph) <= len(parts) && slices.Equal(parts[i:i+len(ph)], ph) {
				return true, "name contains " + strings.Join(ph, "_")
			}
		}
	}
	for _, p := range parts {
		if why := partReason(p); why != "" {
			return true, why
		}
	}
	return false, ""
}

// runTogether: s is the words of ph run together (SECRETKEY for SECRET
// KEY), compared without joining them: every name of an environment is
// screened on every policy build.
func runTogether(s string, ph []string) bool {
	for _, w := range ph {
		var ok bool
		if s, ok = strings.CutPrefix(s, w); !ok {
			return false
		}
	}
	return s == ""
}

// partReason says why one upper-case name part is a credential, or "".
func partReason(p string) string {
	if benignParts[p] {
		return ""
	}
	// KEY2, TOKEN_1: a numbered credential is still one.
	stem := strings.TrimRight(p, "0123456789")
	if stem == "" {
		return ""
	}
	// P12, PKCS12: words whose digits are part of them.
	if credentialWords[p] {
		return fmt.Sprintf("name part %s is the credential word %s", p, p)
	}
	if credentialWords[stem] {
		return fmt.Sprintf("name part %s is the credential word %s", p, stem)
	}
	if benignParts[stem] {
		return ""
	}
	for _, w := range credentialSubstrings {
		if strings.Contains(p, w) {
			return fmt.Sprintf("name part %s contains %s", p, w)
		}
	}
	for _, w := range credentialPrefixes {
		if strings.HasPrefix(p, w) {
			return fmt.Sprintf("name part %s starts with %s", p, w)
		}
	}
	for _, w := range credentialSuffixes {
		if strings.HasSuffix(stem, w) {
			return fmt.Sprintf("name part %s ends with %s", p, w)
		}
	}
	return ""
}

// Thresholds of the value rule.
const (
	// SecretValueMinLen is the shortest value the entropy rule considers.
	SecretValueMinLen = 20
	// SecretValueMinEntropy is the Shannon entropy, in bits per character,
	// from which a value looks random.
	SecretValueMinEntropy = 3.5
	// SecretValueMinEntropyHex is the same for a value of hex digits only,
	// whose alphabet carries at most 4 bits per character: at 3.5 a fifth
	// of random 32-digit hex keys would pass.
	SecretValueMinEntropyHex = 3.0
)

// LooksLikeSecretValue reports whether a variable's value looks like a secret
// whatever its name, with the reason. Two rules:
//
//   - a URL carrying a password ("scheme://user:password@host"), a token as
//     its user ("https://<token>@host") or a credential-named query
//     parameter ("?access_token=..."); any other URL is not a secret;
//   - a random-looking string: at least SecretValueMinLen characters, no
//     spaces, at least SecretValueMinEntropy bits per character
//     (SecretValueMinEntropyHex for hex digits only), letters and
//     digits mixed as random text mixes them (they alternate at least
//     twice), and not an existing absolute path or a list of absolute paths.
//
// The mixing condition keeps word slugs and dated identifiers
// ("octo-org/widgets-frontend", "ISSUE-20240101-crash") out; hex digests
// are caught (a 40-character hex string may be a commit or a token).
func LooksLikeSecretValue(value string) (bool, string) {
	return LooksLikeSecretValueOn(value, func(p string) bool { _, err := os.Stat(p); return err == nil })
}

// LooksLikeSecretValueOn is LooksLikeSecretValue looking paths up with
// exists (a recorder of what a compile read, package hostread).
func LooksLikeSecretValueOn(value string, exists func(string) bool) (bool, string) {
	if strings.Contains(value, "://") {
		return secretURL(value, exists)
	}
	if len(value) < SecretValueMinLen || strings.ContainsFunc(value, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}) {
		return false, ""
	}
	if isPathList(value) || existingPath(value, exists) {
		return false, ""
	}
	h, floor := entropy(value), SecretValueMinEntropy
	if isHex(value) {
		floor = SecretValueMinEntropyHex
	}
	if h < floor || alternations(value) < 2 {
		return false, ""
	}
	return true, fmt.Sprintf("value looks like a secret: %d chars, %.1f bits/char", len(value), h)
}

// secretURL applies the URL rule to a value containing "://".
func secretURL(value string, exists func(string) bool) (bool, string) {
	u, err := url.Parse(value)
	if err != nil || u.Scheme == "" {
		// Not a URL after all; look for userinfo by hand.
		_, rest, _ := strings.Cut(value, "://")
		if at := strings.IndexByte(rest, '@'); at > 0 && strings.Contains(rest[:at], ":") &&
			!strings.ContainsAny(rest[:at], "/") {
			return true, "value is a URL with a password in it (scheme://user:password@host)"
		}
		return false, ""
	}
	if u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			return true, "value is a URL with a password in it (scheme://user:password@host)"
		}
		if ok, _ := LooksLikeSecretValueOn(u.User.Username(), exists); ok {
			return true, "value is a URL with a token as its user (scheme://token@host)"
		}
	}
	for k := range u.Query() {
		if ok, _ := LooksLikeCredential(k); ok {
			return true, "value is a URL with a credential parameter " + k
		}
	}
	return false, ""
}

// isPathList: PATH, PYTHONPATH and the like, every element absolute.
func isPathList(v string) bool {
	if !strings.Contains(v, string(os.PathListSeparator)) {
		return false
	}
	for _, e := range filepath.SplitList(v) {
		if e != "" && !filepath.IsAbs(e) {
			return false
		}
	}
	return true
}

func existingPath(v string, exists func(string) bool) bool {
	return filepath.IsAbs(v) && exists(v)
}

// entropy is the Shannon entropy of s's bytes, in bits per byte.
func entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	n := float64(len(s))
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// alternations counts adjacent letter-digit and digit-letter pairs.
func alternations(s string) int {
	isLetter := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	n := 0
	for i := 1; i < len(s); i++ {
		a, b := s[i-1], s[i]
		if isLetter(a) && isDigit(b) || isDigit(a) && isLetter(b) {
			n++
		}
	}
	return n
}

// isHex: only hex digits, in one case.
func isHex(s string) bool {
	lower := strings.IndexFunc(s, func(r rune) bool { return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') }) < 0
	upper := strings.IndexFunc(s, func(r rune) bool { return !(r >= '0' && r <= '9' || r >= 'A' && r <= 'F') }) < 0
	return lower || upper
}
