package runproxy

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/policy"
)

// brokerSecrets reads each brokered secret's value from this process's
// own environment (never a file: nothing a sandbox wrote can become one)
// and makes its placeholder for this run.
func brokerSecrets(p *policy.Policy) ([]egress.Broker, error) {
	var out []egress.Broker
	for _, b := range p.Network.Brokers {
		v := os.Getenv(b.Name)
		if v == "" {
			return nil, fmt.Errorf("%s: %s is not set in triage-sandbox's environment; export the secret before the run, or remove %s", b.Key, b.Name, b.Key)
		}
		ph, err := egress.NewPlaceholder(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.Key, err)
		}
		out = append(out, egress.Broker{Name: b.Name, Value: v, Placeholder: ph, Hosts: slices.Clone(b.Hosts), Methods: slices.Clone(b.Methods)})
	}
	return out, nil
}

// withPlaceholders is p's environment with each brokered variable's
// placeholder in place of the policy's marker.
func withPlaceholders(env []policy.EnvVar, bs []egress.Broker) []policy.EnvVar {
	env = slices.Clone(env)
	for i := range env {
		for _, b := range bs {
			if env[i].Name == b.Name {
				env[i].Value = b.Placeholder
			}
		}
	}
	return env
}

// systemRoots are where Linux distributions keep the system's trust
// bundle (crypto/x509's list), in its order.
var systemRoots = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/tls/cacert.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// writeTrustBundle writes the system roots and the run's broker CA into
// dir (the socket's directory, bound read-only in the sandbox), read-only
// and owned by this process: a policy input no sandbox can change. No
// system bundle found is a refusal, not a bundle of the run's CA alone
// (every other HTTPS host would then fail inside).
func writeTrustBundle(dir string, ca []byte) error {
	var roots []byte
	var errs []error
	for _, f := range systemRoots {
		b, err := os.ReadFile(f)
		if err == nil && bytes.Contains(b, []byte("-----BEGIN CERTIFICATE-----")) {
			roots = b
			break
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if roots == nil {
		return fmt.Errorf("brokered secrets need the system's trust bundle to add the run's CA to, and none was found (%s): %w", systemRoots[0], errors.Join(errs...))
	}
	if !bytes.HasSuffix(roots, []byte("\n")) {
		roots = append(roots, '\n')
	}
	path := filepath.Join(dir, filepath.Base(egress.CABundleInSandbox))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return fmt.Errorf("the trust bundle: %w", err)
	}
	_, err = f.Write(append(roots, ca...))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("the trust bundle: %w", err)
	}
	return nil
}
