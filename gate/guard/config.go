package guard

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Defaults, as ai-triager's [sandbox.guard].
const (
	DefaultMinSafe = 0.5
	DefaultMaxRisk = 0.7
	DefaultTimeout = 60 * time.Second
)

// minSecretBytes is the shortest CacheSecret accepted (128 bits).
const minSecretBytes = 16

// Config configures a Guard. Thresholds are taken literally (0 is a valid
// min_safe); start from DefaultConfig to get ai-triager's defaults.
type Config struct {
	Model   string  // model name sent to the endpoint (required with URL)
	MinSafe float64 // allowed only if safe >= MinSafe
	MaxRisk float64 // allowed only if every risk <= MaxRisk

	// URL is an OpenAI-compatible base URL (http://127.0.0.1:8080/v1) or
	// the full chat-completions URL; "" when Command is used.
	URL    string
	APIKey string // bearer token for URL; "" for local servers

	// Command is the external command transport (no shell): it gets the
	// chat-completions request JSON on stdin and prints the scores JSON on
	// stdout. It runs on the host with the caller's environment.
	Command []string

	Timeout time.Duration // per question; 0 means DefaultTimeout

	// CachePath is a JSON file of cached scores ("" = in-memory cache
	// only). Entries are signed with CacheSecret, which is required with a
	// CachePath: the default place, .triage/, is writable by the sandboxed
	// agent, which could otherwise plant an "allowed" verdict for the very
	// command it is about to run. Keep the secret where the sandbox cannot
	// read it (LoadCacheSecret creates one).
	CachePath   string
	CacheSecret []byte

	// LogPath is the JSONL log of every verdict ("" = no log), e.g.
	// <workspace>/.triage/guard.log.
	LogPath string
}

// DefaultConfig returns a Config with ai-triager's thresholds and timeout;
// the caller fills in the model and one transport.
func DefaultConfig() Config {
	return Config{MinSafe: DefaultMinSafe, MaxRisk: DefaultMaxRisk, Timeout: DefaultTimeout}
}

// Guard judges commands. It is safe for concurrent use.
type Guard struct {
	cfg       Config
	transport transport
	// judgeID names the model and its transport in the cache key, so a
	// different model or endpoint is never served another's scores.
	judgeID string
	cache   *cache
	log     *verdictLog
}

// New validates cfg and returns a Guard. Errors are one line naming the
// [sandbox.guard] key at fault.
func New(cfg Config) (*Guard, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if err := validate(cfg); err != nil {
		return nil, err
	}
	g := &Guard{cfg: cfg, cache: newCache(cfg.CachePath, cfg.CacheSecret), log: &verdictLog{path: cfg.LogPath}}
	id := struct {
		Model   string   `json:"model"`
		URL     string   `json:"url,omitempty"`
		Command []string `json:"command,omitempty"`
	}{Model: cfg.Model}
	if cfg.URL != "" {
		endpoint, err := chatEndpoint(cfg.URL)
		if err != nil {
			return nil, err
		}
		g.transport = newHTTPTransport(endpoint, cfg.APIKey)
		id.URL = endpoint
	} else {
		g.transport = &commandTransport{argv: append([]string(nil), cfg.Command...)}
		id.Command = cfg.Command
	}
	b, err := json.Marshal(id)
	if err != nil {
		return nil, fmt.Errorf("[sandbox.guard]: %w", err)
	}
	g.judgeID = string(b)
	return g, nil
}

func validate(cfg Config) error {
	for _, t := range []struct {
		key string
		v   float64
	}{{"min_safe", cfg.MinSafe}, {"max_risk", cfg.MaxRisk}} {
		if !(t.v >= 0 && t.v <= 1) { // also refuses NaN
			return fmt.Errorf("[sandbox.guard] %s must be between 0 and 1, got %v", t.key, t.v)
		}
	}
	if cfg.Timeout < 0 {
		return fmt.Errorf("[sandbox.guard] timeout must be positive, got %s", cfg.Timeout)
	}
	hasURL, hasCmd := strings.TrimSpace(cfg.URL) != "", len(cfg.Command) > 0
	switch {
	case hasURL && hasCmd:
		return errors.New("[sandbox.guard] url and command are both set; set exactly one")
	case !hasURL && !hasCmd:
		return errors.New("[sandbox.guard] neither url nor command is set; set exactly one")
	case hasCmd && cfg.Command[0] == "":
		return errors.New("[sandbox.guard] command: the program name is empty")
	case hasURL && strings.TrimSpace(cfg.Model) == "":
		return errors.New("[sandbox.guard] model is empty; name the model the endpoint should use")
	}
	if strings.ContainsAny(cfg.APIKey, "\r\n") {
		return errors.New("[sandbox.guard] api key contains a line break")
	}
	if cfg.CachePath != "" && len(cfg.CacheSecret) < minSecretBytes {
		return fmt.Errorf("[sandbox.guard] cache %s needs a secret of at least %d bytes to sign verdicts (the sandbox may write next to it)", cfg.CachePath, minSecretBytes)
	}
	return nil
}

// chatEndpoint accepts a base URL (…/v1) or the full …/chat/completions URL.
func chatEndpoint(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return "", fmt.Errorf("[sandbox.guard] url %q: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("[sandbox.guard] url %q: scheme must be http or https", u.Redacted())
	}
	if u.Host == "" {
		return "", fmt.Errorf("[sandbox.guard] url %q: no host", u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("[sandbox.guard] url %q: no query or fragment expected", u.Redacted())
	}
	u.Path, u.RawPath = strings.TrimRight(u.Path, "/"), ""
	if !strings.HasSuffix(u.Path, "/chat/completions") {
		u.Path += "/chat/completions"
	}
	return u.String(), nil
}
