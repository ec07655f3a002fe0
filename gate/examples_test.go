package gate

import (
	"strings"
	"testing"
)

// TestRuleExamples: every rule's match and not-match examples give their
// verdicts. The table is compiled in, so this proves it for every build
// of this source; New no longer re-proves it at each start.
func TestRuleExamples(t *testing.T) {
	for _, r := range ruleTable() {
		if err := r.checkExamples(); err != nil {
			t.Error(err)
		}
	}
}

// TestRuleExamplesCatchBrokenRules: the example check can fail. A rule
// whose checks are removed fails one of its match examples, one whose
// example is wrong fails with one line naming the rule and the example,
// and one without examples is refused.
func TestRuleExamplesCatchBrokenRules(t *testing.T) {
	for _, r := range ruleTable() {
		stripped := r
		stripped.tools, stripped.on = nil, nil
		if err := stripped.checkExamples(); err == nil {
			t.Errorf("rule %s without its checks still passes its examples; give it an example its table checks decide", r.Name)
		}
		wrong := r
		wrong.match = append([]string{"ls -l"}, r.match...)
		err := wrong.checkExamples()
		if err == nil || !strings.Contains(err.Error(), r.Name) || !strings.Contains(err.Error(), `"ls -l"`) || strings.Contains(err.Error(), "\n") {
			t.Errorf("rule %s with a match example it allows: %v; want one line naming the rule and the example", r.Name, err)
		}
		wrong = r
		wrong.notMatch = append([]string{r.match[0]}, r.notMatch...)
		if err := wrong.checkExamples(); err == nil || !strings.Contains(err.Error(), "not-match") {
			t.Errorf("rule %s with a not-match example it decides: %v; want an error", r.Name, err)
		}
		none := r
		none.notMatch = nil
		if err := none.checkExamples(); err == nil {
			t.Errorf("rule %s without a not-match example passes", r.Name)
		}
	}
}

// TestRuleSites: every rule judges at least one site, and the ones the
// walker used to report itself name theirs.
func TestRuleSites(t *testing.T) {
	want := map[string][]site{
		ruleDiskWrite:       {siteCommand, siteRedirect},
		ruleShutdown:        {siteCommand, siteRedirect},
		ruleForkBomb:        {siteFunction, siteCode},
		ruleDownloadExec:    {siteCommand, siteRedirect, sitePipeline, siteCode},
		ruleSQLDrop:         {siteCommand, sitePipeline},
		ruleSecretRead:      {siteCommand, siteRedirect},
		rulePackageInstall:  {siteCommand, siteCode},
		ruleRecursiveDelete: {siteCommand, siteCode},
	}
	for _, r := range ruleTable() {
		got := r.sites()
		if len(got) == 0 {
			t.Errorf("rule %s judges no site", r.Name)
		}
		if w, ok := want[r.Name]; ok && !equalSites(got, w) {
			t.Errorf("rule %s judges %v, want %v", r.Name, got, w)
		}
	}
}

func equalSites(a, b []site) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// unreachableTools are the keys of a rule's tools the walker never looks
// up: applyRules looks a command up by its family, so a key that is not
// its own family (bash, whose family is sh) names no command.
func unreachableTools(r ruleDef) []string {
	var out []string
	for tool := range r.tools {
		if tool != anyCommand && tool != dynamicCommand && family(tool) != tool {
			out = append(out, tool)
		}
	}
	return out
}

// TestRuleToolsReachable: every key of every rule's tools is a family the
// walker looks up (and the check finds one that is not).
func TestRuleToolsReachable(t *testing.T) {
	for _, r := range ruleTable() {
		if dead := unreachableTools(r); len(dead) > 0 {
			t.Errorf("rule %s lists tools %v that are not families (see family); list their family instead", r.Name, dead)
		}
	}
	broken := ruleDef{tools: each(checkSecretArgs, "bash", "mkfs.ext4", "sh")}
	if dead := unreachableTools(broken); len(dead) != 2 {
		t.Errorf("unreachableTools(bash, mkfs.ext4, sh) = %v, want bash and mkfs.ext4", dead)
	}
}
