package sandbox

import (
	"path/filepath"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/hostread"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// benignNames are withheld variables whose values are not secrets and
// would shred ordinary output if redacted (the working directory, the
// terminal, the shell's own bookkeeping).
var benignNames = map[string]bool{
	"PWD": true, "OLDPWD": true, "SHLVL": true, "_": true, "TERM": true, "COLORTERM": true,
	"LS_COLORS": true, "SHELL": true, "LOGNAME": true, "USER": true, "HOSTNAME": true,
	"LANG": true, "LANGUAGE": true, "EDITOR": true, "VISUAL": true, "PAGER": true, "MAIL": true,
}

// Secrets returns the caller's values output must never show: every
// variable the policy withheld as a credential (Dropped entries with
// Credential set: a credential-looking name, or a secret-looking value
// under a wildcard), every credential-looking name or secret-looking value
// even when it was passed (an exact name in [sandbox] env), and every other
// withheld variable unless it is plainly not a secret (a benign name, or an
// existing path), and every brokered secret's value whatever its name.
func Secrets(p *policy.Policy, host policy.Host) []output.Secret {
	withheld := map[string]policy.EnvDecision{}
	for _, d := range p.Dropped {
		withheld[d.Name] = d
	}
	brokered := map[string]bool{}
	for _, b := range p.Network.Brokers {
		brokered[b.Name] = true
	}
	var out []output.Secret
	for _, kv := range host.Env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || len(value) < output.MinSecretLen {
			continue
		}
		d, dropped := withheld[name]
		// A brokered secret is one whatever its name looks like.
		if brokered[name] || isSecret(host.Reads, name, value, d, dropped) {
			out = append(out, output.Secret{Name: name, Value: value})
		}
	}
	return out
}

func isSecret(rd *hostread.Recorder, name, value string, d policy.EnvDecision, dropped bool) bool {
	if dropped && d.Credential {
		return true
	}
	if cred, _ := profiles.LooksLikeCredential(name); cred {
		return true
	}
	if benignNames[name] || strings.HasPrefix(name, "LC_") {
		return false
	}
	if secret, _ := profiles.LooksLikeSecretValueOn(value, rd.Exists); secret {
		return true
	}
	return dropped && !isPath(rd, value)
}

func isPath(rd *hostread.Recorder, v string) bool {
	return filepath.IsAbs(v) && rd.Exists(v)
}
