package docker

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLSMLayers(t *testing.T) {
	tests := []struct {
		name           string
		files          map[string]string
		apparmor, selx bool
		lsm            string
	}{
		{"none", nil, false, false, "active: unknown (no /sys/kernel/security/lsm; securityfs not mounted)"},
		{"apparmor", map[string]string{"sys/kernel/security/lsm": "lockdown,capability,apparmor\n",
			"sys/module/apparmor/parameters/enabled": "Y\n"}, true, false, "active: lockdown,capability,apparmor"},
		{"selinux permissive", map[string]string{"sys/kernel/security/lsm": "selinux", "sys/fs/selinux/enforce": "0"}, false, false, "active: selinux"},
		{"selinux enforcing", map[string]string{"sys/kernel/security/lsm": "selinux", "sys/fs/selinux/enforce": "1"}, false, true, "active: selinux"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for p, c := range tt.files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			l := lsmLayers(root)
			if l[0].Detail != tt.lsm || l[1].Available != tt.apparmor || l[2].Available != tt.selx {
				t.Fatalf("layers %+v", l)
			}
		})
	}
}
