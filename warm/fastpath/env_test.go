package fastpath

import "testing"

// Only where a process stands may differ between a front and its keeper:
// every other variable, its value or its presence, keeps the keeper's
// environment apart.
func TestSameEnv(t *testing.T) {
	keeper := []string{"HOME=/root", "PATH=/bin", "PWD=/a", "OLDPWD=/b", "_=/bin/x", "SHLVL=2"}
	for _, c := range []struct {
		name  string
		front []string
		same  bool
	}{
		{"identical", keeper, true},
		{"another order", []string{"SHLVL=2", "_=/bin/x", "OLDPWD=/b", "PWD=/a", "PATH=/bin", "HOME=/root"}, true},
		{"another place", []string{"HOME=/root", "PATH=/bin", "PWD=/c", "OLDPWD=/d", "_=/bin/y", "SHLVL=1"}, true},
		{"place vars absent", []string{"HOME=/root", "PATH=/bin"}, true},
		{"another value", []string{"HOME=/home/x", "PATH=/bin", "PWD=/a"}, false},
		{"one more", []string{"HOME=/root", "PATH=/bin", "DOCKER_HOST=tcp://x"}, false},
		{"one less", []string{"HOME=/root"}, false},
		{"a prefix of a place var", []string{"HOME=/root", "PATH=/bin", "PWDX=1"}, false},
	} {
		if got := SameEnv(keeper, c.front); got != c.same {
			t.Errorf("%s: SameEnv = %v, want %v", c.name, got, c.same)
		}
	}
}
