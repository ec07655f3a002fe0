package guard

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestNewValidates(t *testing.T) {
	base := func() Config {
		c := DefaultConfig()
		c.Model = "m"
		c.URL = "http://127.0.0.1:8080/v1"
		return c
	}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string // "" = valid
	}{
		{"defaults", func(c *Config) {}, ""},
		{"thresholds at bounds", func(c *Config) { c.MinSafe, c.MaxRisk = 0, 1 }, ""},
		{"https", func(c *Config) { c.URL = "https://models.example/v1" }, ""},
		{"command", func(c *Config) { c.URL, c.Command = "", []string{"/bin/true"} }, ""},
		{"command without model", func(c *Config) { c.URL, c.Model, c.Command = "", "", []string{"/bin/true"} }, ""},
		{"zero timeout is default", func(c *Config) { c.Timeout = 0 }, ""},
		{"min_safe above 1", func(c *Config) { c.MinSafe = 1.5 }, "[sandbox.guard] min_safe must be between 0 and 1"},
		{"min_safe NaN", func(c *Config) { c.MinSafe = math.NaN() }, "[sandbox.guard] min_safe"},
		{"max_risk negative", func(c *Config) { c.MaxRisk = -0.1 }, "[sandbox.guard] max_risk must be between 0 and 1"},
		{"negative timeout", func(c *Config) { c.Timeout = -time.Second }, "[sandbox.guard] timeout"},
		{"both transports", func(c *Config) { c.Command = []string{"x"} }, "[sandbox.guard] url and command are both set"},
		{"no transport", func(c *Config) { c.URL = "" }, "neither url nor command"},
		{"empty program", func(c *Config) { c.URL, c.Command = "", []string{""} }, "[sandbox.guard] command"},
		{"no model", func(c *Config) { c.Model = "" }, "[sandbox.guard] model"},
		{"ftp scheme", func(c *Config) { c.URL = "ftp://127.0.0.1/v1" }, "[sandbox.guard] url"},
		{"no scheme", func(c *Config) { c.URL = "127.0.0.1:8080/v1" }, "[sandbox.guard] url"},
		{"no host", func(c *Config) { c.URL = "http:///v1" }, "no host"},
		{"query", func(c *Config) { c.URL = "http://127.0.0.1/v1?x=1" }, "no query"},
		{"password redacted", func(c *Config) { c.URL = "ftp://u:hunter2@127.0.0.1/" }, "xxxxx"},
		{"api key newline", func(c *Config) { c.APIKey = "a\nb" }, "api key"},
		{"cache without secret", func(c *Config) { c.CachePath = "/tmp/x.json" }, "[sandbox.guard] cache"},
		{"cache short secret", func(c *Config) { c.CachePath, c.CacheSecret = "/tmp/x.json", []byte("short") }, "secret"},
		{"cache with secret", func(c *Config) { c.CachePath, c.CacheSecret = "/tmp/x.json", testSecret }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.mod(&c)
			_, err := New(c)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted, want error containing %q", tc.want)
			case err != nil && (!strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n")):
				t.Fatalf("error %q, want one line containing %q", err, tc.want)
			case err != nil && strings.Contains(err.Error(), "hunter2"):
				t.Fatalf("error leaks the password: %v", err)
			}
		})
	}
}

func TestNewDefaultTimeout(t *testing.T) {
	g := mustNew(t, Config{Model: "m", URL: "http://127.0.0.1:1/v1", MinSafe: 0.5, MaxRisk: 0.7})
	if g.cfg.Timeout != DefaultTimeout {
		t.Fatalf("timeout %s", g.cfg.Timeout)
	}
}
