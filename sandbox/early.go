package sandbox

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/triage-sandbox/triage-sandbox/audit"
	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/output"
	"github.com/triage-sandbox/triage-sandbox/policy"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// RecordConfigRefusal audits a run refused before any policy existed (a
// config that does not load, a checkout that is missing): in the default
// audit log of the workspace the config would have named, with every value
// of the caller's environment that may be a secret redacted from the argv
// and the error. It returns the refusal, extended when the record could
// not be written.
func RecordConfigRefusal(host policy.Host, configFlag string, role profiles.Role, argv []string, refusal error) error {
	cfgPath, root := configFlag, host.Cwd
	if cfgPath == "" {
		if found, err := config.FindAll(host.Cwd); err == nil && len(found) > 0 {
			cfgPath = found[0]
		}
	}
	if cfgPath != "" {
		if abs, err := filepath.Abs(cfgPath); err == nil {
			cfgPath, root = abs, filepath.Dir(abs)
		}
	}
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	var secrets []output.Secret
	for _, kv := range host.Env {
		name, value, ok := strings.Cut(kv, "=")
		if ok && len(value) >= output.MinSecretLen && isSecret(nil, name, value, policy.EnvDecision{}, false) {
			secrets = append(secrets, output.Secret{Name: name, Value: value})
		}
	}
	red := output.NewRedactor(secrets, output.DefaultRules())
	redacted := make([]string, len(argv))
	for i, a := range argv {
		redacted[i] = red.Redact(a)
	}
	rec := audit.Record{Time: time.Now().UTC(), Role: role, Config: cfgPath, Argv: redacted,
		Gate: "none (refused before a policy existed)", ExitCode: exitcode.Refused, Error: red.Redact(refusal.Error())}
	return withAuditFailure(refusal, audit.Append(policy.DefaultAuditLog(host, root), rec))
}
