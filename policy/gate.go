package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/gate"
	"github.com/triage-sandbox/triage-sandbox/gate/guard"
)

// Gate judges every command before any backend sees it: a deny list over
// the parsed shell (package gate) and an optional decision-model guard
// (package gate/guard). It is compiled into the policy and its hash.
type Gate struct {
	Deny         []string `json:"deny,omitempty"`
	Confirm      []string `json:"confirm,omitempty"`
	Disable      []string `json:"disable,omitempty"`
	ConfirmRules []string `json:"confirm_rules,omitempty"`
	AllowDynamic bool     `json:"allow_dynamic"`
	Guard        Guard    `json:"guard"`
}

// Guard is [sandbox.guard] resolved: where the model is, its thresholds,
// and where verdicts are cached (the caller's state directory, out of
// every sandbox's reach) and logged.
type Guard struct {
	Enabled   bool          `json:"enabled"`
	Model     string        `json:"model,omitempty"`
	MinSafe   float64       `json:"min_safe"`
	MaxRisk   float64       `json:"max_risk"`
	URL       string        `json:"url,omitempty"`
	Command   []string      `json:"command,omitempty"`
	APIKeyEnv string        `json:"api_key_env,omitempty"`
	Timeout   time.Duration `json:"timeout_ns"`
	LogPath   string        `json:"log"`
	CachePath string        `json:"cache"`
	KeyPath   string        `json:"cache_key"`
}

// GateConfig is the gate's configuration for p.
func (p *Policy) GateConfig() gate.Config {
	return gate.Config{
		Role: p.Role, Deny: p.Gate.Deny, Confirm: p.Gate.Confirm, Disable: p.Gate.Disable,
		ConfirmRules: p.Gate.ConfirmRules, AllowDynamic: p.Gate.AllowDynamic,
		Workspace: p.WorkspaceRoot, Writable: p.Writable(),
		// Only a sandbox gives HOME and TMPDIR fresh scratch; allow_all
		// runs in the user's real home.
		Scratch: !p.AllowAll,
	}
}

// buildGate resolves the gate's keys and checks that the rules compile.
func buildGate(cfg *config.File, sb config.Sandbox, p *Policy, host Host) error {
	p.Gate = Gate{Deny: sb.Deny, Confirm: sb.Confirm, Disable: sb.GateDisable, ConfirmRules: sb.GateConfirm}
	p.Gate.AllowDynamic = sb.AllowDynamic != nil && *sb.AllowDynamic
	if _, err := gate.New(p.GateConfig()); err != nil {
		return fmt.Errorf("%s: %w", configName(cfg), err)
	}
	if w := installsDenied(p); w != "" {
		p.Warnings = append(p.Warnings, w)
	}
	g := cfg.Guard
	p.Gate.Guard = Guard{MinSafe: guard.DefaultMinSafe, MaxRisk: guard.DefaultMaxRisk, Timeout: guard.DefaultTimeout}
	gd := &p.Gate.Guard
	gd.Enabled = g.Enabled != nil && *g.Enabled && !p.AllowAll
	if g.Enabled != nil && *g.Enabled && p.AllowAll {
		p.Warnings = append(p.Warnings, "[sandbox.guard] is off under allow_all; the deny list still applies")
	}
	if g.Model != nil {
		gd.Model = *g.Model
	}
	if g.MinSafe != nil {
		gd.MinSafe = *g.MinSafe
	}
	if g.MaxRisk != nil {
		gd.MaxRisk = *g.MaxRisk
	}
	if g.URL != nil {
		gd.URL = *g.URL
	}
	gd.Command = g.Command
	if g.APIKeyEnv != nil {
		gd.APIKeyEnv = *g.APIKeyEnv
	}
	if g.Timeout != nil {
		gd.Timeout = config.TimeoutDuration(*g.Timeout)
	}
	if gd.URL != "" && len(gd.Command) > 0 {
		return fmt.Errorf("%s: [sandbox.guard] has both url and command; keep one", configName(cfg))
	}
	// ai-triager's own log stays where its users look for it; it is opened
	// without following anything planted there. The cache decides what
	// runs, so it lives where no sandbox can write.
	gd.LogPath = filepath.Join(p.WorkspaceRoot, ".triage", "guard.log")
	state := stateDir(host)
	sum := sha256.Sum256([]byte(p.WorkspaceRoot))
	gd.CachePath = filepath.Join(state, "guard", filepath.Base(p.WorkspaceRoot)+"-"+hex.EncodeToString(sum[:6])+".json")
	gd.KeyPath = filepath.Join(state, "guard", "cache.key")
	return nil
}

// installsDenied warns when a role's allow-list names a package index (a
// preset) while the gate still denies package installs in that role: the
// list's first use, `pip install foo==1.4.2`, would be refused. The gate
// is not loosened by itself: installing runs code from a registry, which
// the operator accepts by name.
func installsDenied(p *Policy) string {
	if p.Network.Mode != NetworkProxy || slices.Contains(p.Gate.Disable, gate.RulePackageInstall) || slices.Contains(p.Gate.ConfirmRules, gate.RulePackageInstall) {
		return ""
	}
	var presets []string
	for _, r := range p.Network.Rules {
		if name, ok := strings.CutPrefix(r.From, "preset "); ok && !slices.Contains(presets, name) {
			presets = append(presets, name)
		}
	}
	if len(presets) == 0 {
		return ""
	}
	return fmt.Sprintf("%s names package indexes (%s) but the gate denies package installs in this role (rule %s): add gate_disable = [%q] to [sandbox.%s] to let it install from them",
		p.Network.Key, strings.Join(presets, ", "), gate.RulePackageInstall, gate.RulePackageInstall, p.Role)
}
