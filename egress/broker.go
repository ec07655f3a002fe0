package egress

// Credential brokering: a named secret (a read-only GH_TOKEN, say) that the
// sandbox holds only as a placeholder. The proxy terminates TLS for the
// hosts a secret is bound to, with a leaf certificate signed by a per-run
// CA whose key never leaves this process's memory, and puts the real value
// in place of the placeholder on requests to those hosts with the methods
// it is bound to. The real value never goes to the sandbox: it is masked
// in every response passed back and in every decision recorded.

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/triage-sandbox/triage-sandbox/egress/allow"
)

// Broker is one brokered secret.
type Broker struct {
	Name        string   // the variable's name (GH_TOKEN); decisions name it, never its value
	Value       string   // the real secret: in this process's memory and requests upstream only
	Placeholder string   // what the sandbox holds instead (NewPlaceholder)
	Hosts       []string // names it is sent to; each on the allow-list
	Methods     []string // methods it is sent with (GET, HEAD)
}

// PlaceholderPrefix starts every placeholder, so a person (or a log
// search) recognises one.
const PlaceholderPrefix = "tsbx_brokered_"

// placeholderRandom is the least number of random characters in one.
const placeholderRandom = 24

// NewPlaceholder returns a fresh placeholder for value: the prefix and
// random letters and digits, as long as value when that is long enough,
// so that masking the value in a response with the placeholder keeps its
// length (and Content-Length true).
func NewPlaceholder(value string) (string, error) {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	n := max(len(value), len(PlaceholderPrefix)+placeholderRandom) - len(PlaceholderPrefix)
	b := make([]byte, n)
	max := big.NewInt(int64(len(alphabet)))
	for i := range b {
		k, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", fmt.Errorf("a placeholder: %w", err)
		}
		b[i] = alphabet[k.Int64()]
	}
	return PlaceholderPrefix + string(b), nil
}

// checkBrokers normalises bs in place and says what is wrong with one.
func checkBrokers(bs []Broker, rules []allow.Rule) error {
	hosts := map[string]string{}
	for i := range bs {
		b := &bs[i]
		if b.Name == "" {
			return errors.New("a brokered secret without a name")
		}
		what := "brokered secret " + b.Name
		if err := checkBrokerFields(b); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if err := normaliseBrokerHosts(b, rules, hosts); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		for j, m := range b.Methods {
			m = strings.ToUpper(m)
			if m == "" || m == http.MethodConnect || strings.Trim(m, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
				return fmt.Errorf("%s: method %q is not an HTTP method a secret can be bound to", what, b.Methods[j])
			}
			b.Methods[j] = m
		}
	}
	return nil
}

// checkBrokerFields says what is wrong with b's value, placeholder, hosts
// or methods as given.
func checkBrokerFields(b *Broker) error {
	switch {
	case b.Value == "":
		return errors.New("empty value")
	case strings.ContainsFunc(b.Value, func(r rune) bool { return r < ' ' || r >= 0x7f }):
		// It goes into a header: a control byte would split it.
		return errors.New("the value holds a control or non-ASCII character")
	case !strings.HasPrefix(b.Placeholder, PlaceholderPrefix) || len(b.Placeholder) < len(PlaceholderPrefix)+placeholderRandom:
		return errors.New("the placeholder is not one NewPlaceholder makes")
	case strings.Contains(b.Value, b.Placeholder) || strings.Contains(b.Placeholder, b.Value):
		return errors.New("the placeholder and the value overlap")
	case len(b.Hosts) == 0:
		return errors.New("no host")
	case len(b.Methods) == 0:
		return errors.New("no method")
	}
	return nil
}

// normaliseBrokerHosts normalises b's hosts in place: each a name on the
// allow-list, bound to no other secret (hosts records who has which).
func normaliseBrokerHosts(b *Broker, rules []allow.Rule, hosts map[string]string) error {
	for j, h := range b.Hosts {
		name, err := allow.Normalize(h)
		if err != nil || strings.HasPrefix(name, "*") {
			return fmt.Errorf("host %q is not a name", h)
		}
		if !allow.OnSomePort(rules, name) {
			return fmt.Errorf("host %s is not on the network allow-list", name)
		}
		if other, ok := hosts[name]; ok && other != b.Name {
			return fmt.Errorf("host %s is bound to %s already (one secret per host)", name, other)
		}
		hosts[name] = b.Name
		b.Hosts[j] = name
	}
	return nil
}

// brokerOn is the secret bound to host, or nil.
func (p *Proxy) brokerOn(host string) *Broker {
	for i := range p.cfg.Brokers {
		if slices.Contains(p.cfg.Brokers[i].Hosts, host) {
			return &p.cfg.Brokers[i]
		}
	}
	return nil
}

// substitute puts b's value in place of its placeholder in hd, in any
// header value, and inside an Authorization: Basic credential (base64 of
// user:password, the form git sends). The placeholder elsewhere (the URL,
// the body, other encodings) is left as it is: the upstream sees only the
// placeholder, which is worth nothing. With a method b is not bound to, a
// request holding the placeholder is refused, never sent with the value.
// It returns whether the value was put in, or why the request is refused.
func substitute(b *Broker, method string, hd http.Header) (bool, string) {
	found := false
	for name, vs := range hd {
		for _, v := range vs {
			if _, ok := substituted(b, name, v); ok {
				found = true
			}
		}
	}
	if !found {
		return false, ""
	}
	if !slices.Contains(b.Methods, method) {
		return false, fmt.Sprintf("brokered %s is bound to %s only; a %s request with it is refused", b.Name, strings.Join(b.Methods, ", "), oneLine(method))
	}
	for name, vs := range hd {
		for i, v := range vs {
			vs[i], _ = substituted(b, name, v)
		}
	}
	return true, ""
}

// substituted is v of header name with b's value in place of its
// placeholder, and whether it held the placeholder.
func substituted(b *Broker, name, v string) (string, bool) {
	if http.CanonicalHeaderKey(name) == "Authorization" {
		if scheme, cred, ok := strings.Cut(v, " "); ok && strings.EqualFold(scheme, "Basic") {
			dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
			if err == nil && strings.Contains(string(dec), b.Placeholder) {
				return scheme + " " + base64.StdEncoding.EncodeToString([]byte(strings.ReplaceAll(string(dec), b.Placeholder, b.Value))), true
			}
		}
	}
	if !strings.Contains(v, b.Placeholder) {
		return v, false
	}
	return strings.ReplaceAll(v, b.Placeholder, b.Value), true
}

// mask is what stands for b's value where it would reach the sandbox or a
// record: the placeholder when as long (a body keeps its length), else
// as many asterisks.
func (b *Broker) mask() string {
	if len(b.Placeholder) == len(b.Value) {
		return b.Placeholder
	}
	return strings.Repeat("*", len(b.Value))
}

// redact masks every secret's value in s.
func (p *Proxy) redact(s string) string {
	for i := range p.cfg.Brokers {
		if b := &p.cfg.Brokers[i]; strings.Contains(s, b.Value) {
			s = strings.ReplaceAll(s, b.Value, b.mask())
		}
	}
	return s
}

// maskBytes masks every secret's value in b, in place (a mask is as long
// as its value).
func (p *Proxy) maskBytes(b []byte) {
	for i := range p.cfg.Brokers {
		v := []byte(p.cfg.Brokers[i].Value)
		for off := 0; ; {
			j := bytes.Index(b[off:], v)
			if j < 0 {
				break
			}
			copy(b[off+j:], p.cfg.Brokers[i].mask())
			off += j + len(v)
		}
	}
}

// longestValue is the length of the longest secret's value.
func (p *Proxy) longestValue() int {
	n := 1
	for i := range p.cfg.Brokers {
		n = max(n, len(p.cfg.Brokers[i].Value))
	}
	return n
}

// brokerCA is a run's CA: its key lives only here, it signs only for the
// brokered hosts (a name constraint says so to every verifier too).
type brokerCA struct {
	certPEM []byte
	leaves  map[string]*tls.Certificate
}

func newBrokerCA(hosts []string, validFor time.Duration) (*brokerCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:                serial(),
		Subject:                     pkix.Name{CommonName: "triage-sandbox per-run broker CA", Organization: []string{"triage-sandbox"}},
		NotBefore:                   now.Add(-time.Hour),
		NotAfter:                    now.Add(validFor + time.Hour),
		IsCA:                        true,
		BasicConstraintsValid:       true,
		MaxPathLenZero:              true,
		KeyUsage:                    x509.KeyUsageCertSign,
		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         hosts,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &brokerCA{certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), leaves: map[string]*tls.Certificate{}}
	for _, h := range hosts {
		lkey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		leaf := &x509.Certificate{
			SerialNumber: serial(),
			Subject:      pkix.Name{CommonName: h},
			DNSNames:     []string{h},
			NotBefore:    tmpl.NotBefore,
			NotAfter:     tmpl.NotAfter,
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}
		lder, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &lkey.PublicKey, key)
		if err != nil {
			return nil, err
		}
		ca.leaves[h] = &tls.Certificate{Certificate: [][]byte{lder, der}, PrivateKey: lkey}
	}
	return ca, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		// crypto/rand does not fail on Linux or macOS; a fixed serial
		// would still be a valid certificate.
		return big.NewInt(1)
	}
	return n
}

// BrokerCA is the PEM certificate of the run's broker CA, for the
// sandbox's trust bundle, or nil when no secret is brokered.
func (p *Proxy) BrokerCA() []byte {
	if p.ca == nil {
		return nil
	}
	return slices.Clone(p.ca.certPEM)
}

// Authority is a broker CA made once for a sandbox and given to every
// proxy that serves it (Config.Authority); its key lives only in this
// process's memory.
type Authority struct{ ca *brokerCA }

// NewAuthority makes a broker CA for bs's hosts, valid for validFor.
func NewAuthority(bs []Broker, validFor time.Duration) (*Authority, error) {
	var hosts []string
	for _, b := range bs {
		hosts = append(hosts, b.Hosts...)
	}
	ca, err := newBrokerCA(hosts, validFor)
	if err != nil {
		return nil, err
	}
	return &Authority{ca: ca}, nil
}

// PEM is the authority's certificate, for the sandbox's trust bundle.
func (a *Authority) PEM() []byte { return slices.Clone(a.ca.certPEM) }

// covering is a's CA when it signs for every one of hosts.
func (a *Authority) covering(hosts []string) (*brokerCA, error) {
	for _, h := range hosts {
		if a.ca.leaves[h] == nil {
			return nil, fmt.Errorf("the broker authority does not sign for %s", h)
		}
	}
	return a.ca, nil
}
