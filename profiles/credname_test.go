package profiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLooksLikeCredential(t *testing.T) {
	caught := []struct{ name, reason string }{
		// Exact words, as before.
		{"GITHUB_TOKEN", "name part TOKEN is the credential word TOKEN"},
		{"AWS_SECRET_ACCESS_KEY", "name part SECRET is the credential word SECRET"},
		{"ANTHROPIC_API_KEY", "name part KEY is the credential word KEY"},
		{"SSH_AUTH_SOCK", "name part AUTH is the credential word AUTH"},
		{"github_token", "name part TOKEN is the credential word TOKEN"},
		{"API_KEY2", "name part KEY2 is the credential word KEY"},
		// Inside a part: the review's names.
		{"TRIAGE_APITOKEN", "name part APITOKEN contains TOKEN"},
		{"TRIAGE_GHPAT", "name part GHPAT ends with PAT"},
		{"TRIAGE_PRIVKEY", "name part PRIVKEY contains PRIVKEY"},
		{"TRIAGE_DATABASE_URL", "name contains DATABASE_URL"},
		// More of the same shape.
		{"NPM_AUTHTOKEN", "name part AUTHTOKEN contains TOKEN"},
		{"AUTHORIZATION", "name part AUTHORIZATION starts with AUTH"},
		{"TRIAGE_OAUTH2", "name part OAUTH2 is the credential word OAUTH"},
		{"TRIAGE_OAUTHTOKEN", "name part OAUTHTOKEN contains TOKEN"},
		{"SERVICE_OAUTHX", "name part OAUTHX starts with OAUTH"},
		{"HTTP_BASICAUTH", "name part BASICAUTH ends with AUTH"},
		{"PGPASSWORD", "name part PGPASSWORD contains PASSWORD"},
		{"MYSQL_ROOTPASSWD", "name part ROOTPASSWD contains PASSWD"},
		{"GPG_SIGNINGPASSPHRASE", "name part SIGNINGPASSPHRASE contains PASSPHRASE"},
		{"SMTPPASS", "name part SMTPPASS ends with PASS"},
		{"GCPCREDENTIALS", "name part GCPCREDENTIALS contains CREDENTIAL"},
		{"GCP_SACREDS", "name part SACREDS ends with CREDS"},
		{"OPENAI_APIKEY", "name part APIKEY is the credential word APIKEY"},
		{"X_MYAPIKEY", "name part MYAPIKEY contains APIKEY"},
		{"JWT_PRIVATEKEY", "name part JWT is the credential word JWT"},
		{"APP_PRIVATEKEY", "name part PRIVATEKEY contains PRIVATEKEY"},
		{"DEPLOY_SSHKEY", "name part SSHKEY ends with KEY"},
		{"STRIPE_APIKEYS", "name part APIKEYS contains APIKEY"},
		{"BROWSER_COOKIEJAR", "name part COOKIEJAR contains COOKIE"},
		{"TRIAGE_SESSIONID", "name part SESSIONID contains SESSION"},
		{"SENTRYDSN", "name part SENTRYDSN ends with DSN"},
		{"SENTRY_DSN", "name part DSN is the credential word DSN"},
		{"DATABASEURL", "name contains DATABASE_URL"},
		{"APP_DB_URI", "name contains DB_URI"},
		{"AZURE_STORAGE_CONNECTION_STRING", "name contains CONNECTION_STRING"},
		{"SQL_CONN_STR", "name contains CONN_STR"},
		{"GITHUB_PAT", "name part PAT is the credential word PAT"},
		{"GIT_ASKPASS", "name part ASKPASS ends with PASS"},
		{"TOKENIZER_TOKEN", "name part TOKEN is the credential word TOKEN"},
		{"npm_config_//registry.npmjs.org/:_authToken", "name part AUTHTOKEN contains TOKEN"},
		// A webhook URL is a credential, and so are its kin: signing
		// material, tokens by their format, private key and certificate files.
		{"TRIAGE_SLACK_WEBHOOK", "name part WEBHOOK is the credential word WEBHOOK"},
		{"SLACK_WEBHOOK_URL", "name part WEBHOOK is the credential word WEBHOOK"},
		{"DISCORDWEBHOOK", "name part DISCORDWEBHOOK contains WEBHOOK"},
		{"TEAMS_WEBHOOKS", "name part WEBHOOKS is the credential word WEBHOOKS"},
		{"ALERT_HOOK_URL", "name contains HOOK_URL"},
		{"ALERT_HOOKURL", "name contains HOOK_URL"},
		{"PAGER_HOOK_URI", "name contains HOOK_URI"},
		{"S3_PRESIGNED_URL", "name contains PRESIGNED_URL"},
		{"GPG_SIGNING", "name part SIGNING is the credential word SIGNING"},
		{"SIGNING2", "name part SIGNING2 is the credential word SIGNING"},
		{"WEBHOOK_HMAC", "name part WEBHOOK is the credential word WEBHOOK"},
		{"GITHUB_HMAC", "name part HMAC is the credential word HMAC"},
		{"TRIAGE_JWT", "name part JWT is the credential word JWT"},
		{"SERVICEJWT", "name part SERVICEJWT ends with JWT"},
		{"X_BEARER", "name part BEARER is the credential word BEARER"},
		{"SITE_COOKIE", "name part COOKIE is the credential word COOKIE"},
		{"TLS_PEM", "name part PEM is the credential word PEM"},
		{"SERVERPEM", "name part SERVERPEM ends with PEM"},
		{"CLIENT_P12", "name part P12 is the credential word P12"},
		{"CLIENT_PKCS12", "name part PKCS12 is the credential word PKCS12"},
		{"CODESIGN_PFX", "name part PFX is the credential word PFX"},
		{"ANDROID_KEYSTORE", "name part KEYSTORE is the credential word KEYSTORE"},
		{"RELEASEKEYSTORE", "name part RELEASEKEYSTORE contains KEYSTORE"},
		{"CLIENT_CERTIFICATE", "name part CERTIFICATE is the credential word CERTIFICATE"},
		{"TLS_CLIENTCERT", "name part CLIENTCERT ends with CERT"},
	}
	for _, tc := range caught {
		ok, reason := LooksLikeCredential(tc.name)
		if !ok || reason != tc.reason {
			t.Errorf("LooksLikeCredential(%q) = %v, %q; want true, %q", tc.name, ok, reason, tc.reason)
		}
	}
	passed := []string{
		"PATH", "LANG", "TERM", "TZ", "HOME", "PWD", "OLDPWD", "SHLVL", "USER", "SHELL",
		"TOKENIZER_DIR", "TOKENIZERS_PARALLELISM", "TIKTOKEN_CACHE_DIR", "KEYBOARD_LAYOUT",
		"XKB_DEFAULT_LAYOUT", "KEYMAP", "PYTHON_KEYRING_BACKEND", "MONKEY", "MONKEYPATCH_MODE",
		"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "AZURE_AUTHORITY_HOST", "PYTHON_COMPAT",
		"COOKIECUTTER_CONFIG", "LESSKEY", "HOTKEY", "TRIAGE_ISSUE", "TRIAGE_REPO",
		"TRIAGE_SANDBOX_BACKEND", "PLAYWRIGHT_BROWSERS_PATH", "XDG_RUNTIME_DIR", "LC_ALL",
		"PGPASSFILE", "DATABASE_NAME", "DB_HOST", "REDIS_URL", "CONNECTION_TIMEOUT",
		"PATCH_LEVEL", "PATTERN", "COMPASS_HOME", "BYPASS_CACHE", "KEYID", "PASSTHROUGH",
		"TRIAGE_", "_", "", "2", "__",
		// Kin of the webhook and signing words that hold no secret.
		"GIT_HOOKS_PATH", "PRE_COMMIT_HOOK", "HOOK_NAME", "HOOKS_DIR", "HOOK_TIMEOUT",
		"CONCERT_HALL", "PEMBROKE", "SIGNED_OFF_BY", "DESIGNER", "KEYSTONE_REGION",
		"TRIAGE_REPO_URL", "PRESIGN_EXPIRY",
	}
	for _, n := range passed {
		if ok, reason := LooksLikeCredential(n); ok {
			t.Errorf("LooksLikeCredential(%q) = true, %q; want false", n, reason)
		}
	}
}

func TestLooksLikeSecretValue(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "a-fairly-long-directory-name-0123456789abcdef")
	if err := os.MkdirAll(existing, 0o755); err != nil {
		t.Fatal(err)
	}
	caught := []struct{ value, reason string }{
		{"ghp_R2d9xQ7mPz4LkT8vNw3yB6cJ1hF5sGa0eU2i", "value looks like a secret: 40 chars, 5.2 bits/char"},
		{"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "value looks like a secret: 40 chars, 4.7 bits/char"},
		{"3f786850e387550fdab836ed7d6dc881de23001b", "value looks like a secret: 40 chars, 3.6 bits/char"},
		{"sk-proj-4fJk2LmN8pQ1rS5tU7vW9xY0zA3bC6dE", "value looks like a secret: 40 chars, 5.1 bits/char"},
		{"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
			"value looks like a secret: 92 chars, 5.2 bits/char"},
		{"5f4dcc3b5aa765d61d8327deb882cf99", "value looks like a secret: 32 chars, 3.8 bits/char"},
		{"a1a1b2b2c3c3a1a1b2b2c3c3d4d4e5e5", "value looks like a secret: 32 chars, 3.2 bits/char"}, // hex: 3.0 bits/char suffice
		{"/nonexistent/3f786850e387550fdab836ed7d6dc881", "value looks like a secret: 45 chars, 4.1 bits/char"},
		{"postgres://app:hunter2@db.internal:5432/app", "value is a URL with a password in it (scheme://user:password@host)"},
		{"redis://:pw@localhost:6379", "value is a URL with a password in it (scheme://user:password@host)"},
		{"https://x-access-token:ghs_abc123@github.com/o/r.git", "value is a URL with a password in it (scheme://user:password@host)"},
		{"https://ghp_R2d9xQ7mPz4LkT8vNw3yB6cJ1hF5sGa0eU2i@github.com/o/r", "value is a URL with a token as its user (scheme://token@host)"},
		{"https://hooks.example.com/in?access_token=abc", "value is a URL with a credential parameter access_token"},
		{"mysql://root:pa ss@%zz", "value is a URL with a password in it (scheme://user:password@host)"},
	}
	for _, tc := range caught {
		ok, reason := LooksLikeSecretValue(tc.value)
		if !ok || reason != tc.reason {
			t.Errorf("LooksLikeSecretValue(%q) = %v, %q; want true, %q", tc.value, ok, reason, tc.reason)
		}
	}
	passed := []string{
		"", "7", "42", "C.UTF-8", "xterm-256color", "Europe/Amsterdam", "/bin/bash",
		"short-token-a1b2c3", // under 20 characters
		"https://github.com/octo-org/widgets/issues/7",
		"https://example.com/search?q=x1y2z3&page=2",
		"ssh://git@github.com/octo-org/widgets.git",
		"octo-org/widgets-frontend-service",
		"ISSUE-20240101-crash-on-start",
		"the quick brown fox jumps over 13 lazy dogs a1b2c3d4",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1a1a",
		"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"/home/u/.local/bin:/home/u/x9y8z7w6v5u4t3s2r1",
		existing,
		"rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:do=01;35:bd=40;33;01:cd=40;33;01:or=40;31;01",
		strings.Repeat("ab", 20),
		"12345678901234567890123456", // digits only: no letters to mix
		"abcdefabcdefabcdefabcdef0",  // hex, but one letter-digit switch
	}
	for _, v := range passed {
		if ok, reason := LooksLikeSecretValue(v); ok {
			t.Errorf("LooksLikeSecretValue(%q) = true, %q; want false", v, reason)
		}
	}
}
