package gitconfig

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// checkoutConfig is what actions/checkout leaves in .git/config with
// persist-credentials (the default); the token is a canary.
const checkoutConfig = `[core]
	repositoryformatversion = 0
	filemode = true
	bare = false
	logallrefupdates = true
[remote "origin"]
	url = https://github.com/o/r
	fetch = +refs/heads/*:refs/remotes/origin/*
[gc]
	auto = 0
[http "https://github.com/"]
	extraheader = AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzX0NBTkFSWUNBTkFSWUNBTkFSWUNBTkFSWUNBTkFSWTAw
[branch "main"]
	remote = origin
	merge = refs/heads/main
`

func TestSanitise(t *testing.T) {
	const tok = "ghs_CANARYCANARYCANARYCANARYCANARYCANARY00"
	for _, tc := range []struct {
		name, config string
		removed      []string // keys
		keep         map[string]string
	}{
		{"actions/checkout", checkoutConfig, []string{"http.https://github.com/.extraheader"},
			map[string]string{"remote.origin.url": "https://github.com/o/r", "core.bare": "false"}},
		{"extraheader without a URL", "[http]\n\textraHeader = Authorization: Bearer x\n", []string{"http.extraheader"}, nil},
		{"remote URL with a token", "[remote \"origin\"]\n\turl = https://x-access-token:" + tok + "@github.com/o/r.git\n",
			[]string{"remote.origin.url"}, nil},
		{"remote URL with userinfo", "[remote \"origin\"]\n\turl = https://alice:hunter2@example.com/o/r.git\n\tpushurl = https://tok@example.com/r\n",
			[]string{"remote.origin.url", "remote.origin.pushurl"},
			map[string]string{"remote.origin.url": "https://example.com/o/r.git", "remote.origin.pushurl": "https://example.com/r"}},
		{"ssh user kept", "[remote \"origin\"]\n\turl = ssh://git@github.com/o/r\n", nil, map[string]string{"remote.origin.url": "ssh://git@github.com/o/r"}},
		{"insteadOf with a token", "[url \"https://oauth2:abc@gitlab.com/\"]\n\tinsteadOf = https://gitlab.com/\n", []string{"url.https://oauth2:abc@gitlab.com/.insteadof"}, nil},
		{"credential helper", "[credential]\n\thelper = store --file /w/.git/creds\n[credential \"https://x\"]\n\tusername = me\n",
			[]string{"credential.helper", "credential.https://x.username"}, nil},
		{"token anywhere", "[foo]\n\tbar = " + tok + "\n", []string{"foo.bar"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es, err := Parse("config", []byte(tc.config))
			if err != nil {
				t.Fatal(err)
			}
			kept, removed := Sanitise(es)
			var keys []string
			for _, r := range removed {
				keys = append(keys, r.Key)
				if strings.Contains(r.String(), "hunter2") || strings.Contains(r.String(), "CANARY") {
					t.Errorf("a removal's report shows the value: %s", r)
				}
			}
			if !slices.Equal(keys, tc.removed) {
				t.Errorf("removed %q, want %q", keys, tc.removed)
			}
			for _, e := range kept {
				if strings.Contains(e.Value, "CANARY") || strings.Contains(e.Value, "hunter2") || strings.Contains(e.Value, "@gitlab") ||
					strings.Contains(strings.ToLower(e.Key()), "extraheader") {
					t.Errorf("kept %s = %q", e.Key(), e.Value)
				}
				if want, ok := tc.keep[e.Key()]; ok && e.Value != want {
					t.Errorf("%s = %q, want %q", e.Key(), e.Value, want)
				}
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ name, config, want string }{
		{"NUL", "[a]\n\tb = c\x00\n", "config:2: a NUL byte"},
		{"key before section", "b = c\n", "config:1: a variable before any [section]"},
		{"key on header line", "[a] b = c\n", "config:1: a variable on the section header's line"},
		{"open quote", "[a]\n\tb = \"c\n", "config:2: a value whose quote is not closed"},
		{"bad escape", "[a]\n\tb = c\\q\n", "config:2: unknown escape \\q"},
		{"bad header", "[a \"b\"\n", "config:1: a subsection name without its closing"},
		{"junk", "[a]\n\t=c\n", "config:2: not a [section], a variable or a comment"},
		{"continuation at EOF", "[a]\n\tb = c\\", "config:2: a backslash at the end of the file"},
		{"too big", "[a]\n" + strings.Repeat("#", MaxBytes), "bytes, more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("config", []byte(tc.config))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestParseAgreesWithGit: what Parse accepts, git reads the same (keys
// and values in order), so the view replayed to the sandbox is the file.
func TestParseAgreesWithGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git is needed to compare with: %v", err)
	}
	for _, c := range []string{
		checkoutConfig,
		"[Core]\n\tBare\n[a.B]\n\tx = 1 ; c\n[s \"Sub \\\"q\\\"\"]\n\tv = \"  sp  \" a\\tb  # c\n\tw = one \\\n  two\n",
		"\xef\xbb\xbf[a]\r\n\tb = c\r\n\t# x\n;y\n\tk=\n",
	} {
		es, err := Parse("config", []byte(c))
		if err != nil {
			t.Fatalf("%q: %v", c, err)
		}
		var mine []string
		for _, e := range es {
			v := e.Value
			if e.NoValue {
				v = "<none>"
			}
			mine = append(mine, e.Key()+"="+v)
		}
		f := filepath.Join(t.TempDir(), "config")
		if err := os.WriteFile(f, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(git, "config", "--file", f, "--null", "--list").Output()
		if err != nil {
			t.Fatalf("git config: %v", err)
		}
		var theirs []string
		for _, rec := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
			k, v, ok := strings.Cut(rec, "\n")
			if !ok {
				v = "<none>"
			}
			theirs = append(theirs, k+"="+v)
		}
		if !slices.Equal(mine, theirs) {
			t.Errorf("config %q:\nParse %q\ngit   %q", c, mine, theirs)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(checkoutConfig))
	f.Add([]byte("[a \"b\\\"\"]\n\tc = \"d\\\n e\" ; f\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := Parse("fuzz", b)
		if err != nil {
			return
		}
		kept, _ := Sanitise(es)
		for _, e := range kept {
			if e.Section == "credential" || (e.Section == "http" && e.Name == "extraheader") || hasUserinfo(e.Subsection) {
				t.Fatalf("kept %s", e.Key())
			}
		}
	})
}
