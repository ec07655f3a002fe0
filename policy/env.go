package policy

import (
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/egress"
	"github.com/triage-sandbox/triage-sandbox/hostread"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// filterEnv applies the allow-list. A name passes when it matches the role's
// allow-list or an [sandbox] env pattern, unless it is screened as a
// credential: its name looks like one (profiles.LooksLikeCredential) or,
// unless the role's allow-list names it exactly, its value does
// (profiles.LooksLikeSecretValue). A screened variable passes only when
// [sandbox] env names it exactly (with a warning). HOME and TMPDIR point at
// the fresh scratch; TRIAGE_SANDBOX_BACKEND and set_env are added.
func filterEnv(role profiles.Role, sb config.Sandbox, host Host, p *Policy) ([]EnvVar, []EnvDecision, []string) {
	var f envFilter
	if p.AllowAll {
		for _, kv := range host.Env {
			if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
				f.put(k, v, "allow_all passes everything")
			}
		}
		return sortEnv(f.env), nil, nil
	}
	f.callers(role, sb, host)
	f.put("TRIAGE_SANDBOX_BACKEND", p.Backend, "set by triage-sandbox, as ai-triager does")
	keys := make([]string, 0, len(sb.SetEnv))
	for k := range sb.SetEnv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f.put(k, sb.SetEnv[k], "[sandbox] set_env")
	}
	// Last, over set_env: the proxy is the only way out, so a setting
	// naming anything else could only make the tools fail.
	if p.Network.Mode == NetworkProxy {
		for _, v := range ProxyEnv() {
			f.put(v.Name, v.Value, v.Why)
		}
	}
	// HOME and TMPDIR always point at the sandbox's own scratch, which the
	// backend allocates (EnvList adds them); no caller value survives.
	kept := f.env[:0]
	for _, e := range f.env {
		if e.Name == "HOME" || e.Name == "TMPDIR" {
			continue
		}
		kept = append(kept, e)
	}
	sort.Slice(f.dropped, func(i, j int) bool { return f.dropped[i].Name < f.dropped[j].Name })
	return sortEnv(kept), f.dropped, f.warnings
}

// envFilter collects filterEnv's decisions: a later put of a name
// replaces its value in place.
type envFilter struct {
	env      []EnvVar
	dropped  []EnvDecision
	warnings []string
	set      map[string]int
}

func (f *envFilter) put(name, value, why string) {
	if i, ok := f.set[name]; ok {
		f.env[i] = EnvVar{name, value, why}
		return
	}
	if f.set == nil {
		f.set = map[string]int{}
	}
	f.set[name] = len(f.env)
	f.env = append(f.env, EnvVar{name, value, why})
}

// callers judges each of the caller's variables: passed, passed with a
// warning (a credential [sandbox] env names exactly) or dropped, and why.
func (f *envFilter) callers(role profiles.Role, sb config.Sandbox, host Host) {
	allow := profiles.EnvAllow(role)
	exact := map[string]bool{}
	for _, pat := range sb.Env {
		if !strings.ContainsAny(pat, "*?[") {
			exact[pat] = true
		}
	}
	for _, kv := range host.Env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		pat, source := matchAllow(role, allow, sb.Env, name)
		cred, reason := screen(host.Reads, name, value, slices.Contains(allow, name))
		switch {
		case pat == "":
			why := "not in the allow-list"
			if cred {
				why += " (and " + reason + ")"
			}
			f.dropped = append(f.dropped, EnvDecision{Name: name, Why: why, Credential: cred})
		case cred && exact[name]:
			f.put(name, value, "[sandbox] env names it exactly, though "+reason+" (passed with a warning)")
			f.warnings = append(f.warnings, "passing credential-looking variable "+name+" ("+reason+") because [sandbox] env names it exactly")
		case cred:
			f.dropped = append(f.dropped, EnvDecision{Name: name, Why: reason + "; matched " + source +
				" but a pattern never passes a credential (name it exactly in [sandbox] env to pass it)", Credential: true})
		default:
			f.put(name, value, source)
		}
	}
}

func sortEnv(env []EnvVar) []EnvVar {
	sort.Slice(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	return env
}

// screen says whether a caller variable is a credential, and why. The name
// rule always applies. The value rule applies except to the names the role's
// allow-list lists exactly (PATH, HOME, TERM, ...): a wildcard must never
// pass a secret-looking value under an innocent name (TRIAGE_ID=ghp_...),
// and a name [sandbox] env lists exactly passes it with a warning.
func screen(rd *hostread.Recorder, name, value string, roleExact bool) (bool, string) {
	if cred, reason := profiles.LooksLikeCredential(name); cred {
		return true, reason
	}
	if roleExact {
		return false, ""
	}
	return profiles.LooksLikeSecretValueOn(value, rd.Exists)
}

// matchAllow returns the pattern that passes name and where it comes from,
// for `policy` output: an exact name before a wildcard, the role's
// allow-list before [sandbox] env. pattern is "" when nothing matches.
func matchAllow(role profiles.Role, allow, extra []string, name string) (pattern, source string) {
	for _, l := range []struct {
		pats []string
		what string
	}{{allow, string(role) + " allow-list"}, {extra, "[sandbox] env"}} {
		if slices.Contains(l.pats, name) {
			return name, l.what + " " + name
		}
	}
	if p := matchAny(allow, name); p != "" {
		return p, string(role) + " allow-list " + p
	}
	if p := matchAny(extra, name); p != "" {
		return p, "[sandbox] env " + p
	}
	return "", ""
}

// matchAny returns the first pattern that matches name, or "".
func matchAny(patterns []string, name string) string {
	for _, p := range patterns {
		if ok, err := path.Match(p, name); err == nil && ok {
			return p
		}
	}
	return ""
}

// ProxyEnv are the variables that send a command's tools through the
// holder's forwarder to the host side's proxy (network allow-list), the
// loopback left direct.
//
// A backend whose sandbox shares the host's loopback (seatbelt) reaches the
// proxy on a port of the host's loopback instead: EnvList puts the run's
// URL (Network.HostProxy) in these variables, so the policy's Env, shown
// and hashed, stays the same for every run.
func ProxyEnv() []EnvVar {
	url := egress.ProxyURL(egress.ForwardAddr, "")
	why := "network allow-list: the host's proxy, through the sandbox's loopback"
	direct := "localhost,127.0.0.1,::1"
	var out []EnvVar
	for _, n := range proxyVars {
		out = append(out, EnvVar{n, url, why})
	}
	for _, n := range []string{"NO_PROXY", "no_proxy"} {
		out = append(out, EnvVar{n, direct, "network allow-list: the sandbox's own loopback, not the proxy"})
	}
	return out
}

// proxyVars are the variables that name the proxy.
var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "npm_config_proxy", "npm_config_https_proxy"}

func isProxyVar(name string) bool { return slices.Contains(proxyVars, name) }
