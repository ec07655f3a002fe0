package policy

import (
	"strings"
	"testing"
)

func TestAllowToolConfigNamesAWritablePath(t *testing.T) {
	cfg := workspace(t, "[sandbox.reproducer]\nallow_tool_config = [\"repros\"]\n")
	p, err := Build(cfg, "reproducer", fakeHost(t), Options{})
	must(t, err)
	if len(p.AllowToolConfig) != 1 || p.AllowToolConfig[0] != "repros" {
		t.Errorf("allow_tool_config = %v", p.AllowToolConfig)
	}
	cfg = workspace(t, "[sandbox]\nallow_tool_config = [\"src\"]\n")
	if _, err := Build(cfg, "agent", fakeHost(t), Options{}); err == nil || !strings.Contains(err.Error(), "not one of the role's writable paths") {
		t.Errorf("err = %v", err)
	}
}
