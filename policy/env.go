package policy

import (
	"path"
	"sort"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/config"
	"github.com/triage-sandbox/triage-sandbox/profiles"
)

// filterEnv applies the allow-list. A name passes when it matches the role's
// allow-list or an [sandbox] env pattern, unless it looks like a credential:
// then only an exact name in env passes it (with a warning). HOME and TMPDIR
// point at the fresh scratch; TRIAGE_SANDBOX_BACKEND and set_env are added.
func filterEnv(role string, sb config.Sandbox, host Host, p *Policy) ([]EnvVar, []EnvDecision, []string) {
	var env []EnvVar
	var dropped []EnvDecision
	var warnings []string
	set := map[string]int{}
	put := func(name, value, why string) {
		if i, ok := set[name]; ok {
			env[i] = EnvVar{name, value, why}
			return
		}
		set[name] = len(env)
		env = append(env, EnvVar{name, value, why})
	}

	if p.AllowAll {
		for _, kv := range host.Env {
			if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
				put(k, v, "allow_all passes everything")
			}
		}
		return sortEnv(env), nil, nil
	}

	allow := profiles.EnvAllow(role)
	exact := map[string]bool{}
	for _, pat := range sb.Env {
		if !strings.ContainsAny(pat, "*?[") {
			exact[pat] = true
		}
	}
	patterns := append(append([]string(nil), allow...), sb.Env...)
	for _, kv := range host.Env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		pat := matchAny(patterns, name)
		cred, reason := profiles.LooksLikeCredential(name)
		switch {
		case pat == "":
			dropped = append(dropped, EnvDecision{Name: name, Why: "not in the allow-list", Credential: cred})
		case cred && exact[name]:
			put(name, value, "listed exactly in [sandbox] env")
			warnings = append(warnings, "passing credential-looking variable "+name+" because [sandbox] env names it exactly")
		case cred:
			dropped = append(dropped, EnvDecision{Name: name, Why: reason + "; matched " + pat +
				" but a pattern never passes a credential (name it exactly in [sandbox] env to pass it)", Credential: true})
		default:
			put(name, value, "allow-list "+pat)
		}
	}
	put("TRIAGE_SANDBOX_BACKEND", p.Backend, "set by triage-sandbox, as ai-triager does")
	keys := make([]string, 0, len(sb.SetEnv))
	for k := range sb.SetEnv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		put(k, sb.SetEnv[k], "[sandbox] set_env")
	}
	// HOME and TMPDIR always point at the sandbox's own scratch, which the
	// backend allocates (EnvList adds them); no caller value survives.
	kept := env[:0]
	for _, e := range env {
		if e.Name == "HOME" || e.Name == "TMPDIR" {
			continue
		}
		kept = append(kept, e)
	}
	sort.Slice(dropped, func(i, j int) bool { return dropped[i].Name < dropped[j].Name })
	return sortEnv(kept), dropped, warnings
}

func sortEnv(env []EnvVar) []EnvVar {
	sort.Slice(env, func(i, j int) bool { return env[i].Name < env[j].Name })
	return env
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
