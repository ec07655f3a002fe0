package guard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// workspace builds a workspace with reproducers, hostile links and a file
// outside it.
func workspace(t *testing.T) (ws, outside string) {
	t.Helper()
	root := t.TempDir()
	ws, outside = filepath.Join(root, "ws"), filepath.Join(root, "outside")
	files := map[string]string{
		"ws/repros/1.py":       "print(1)\n",
		"ws/repros/1_app.py":   "app = 1\n",
		"ws/repros/1_check.py": "check = 1\n",
		"ws/repros/2.py":       "print(2)\n",
		"ws/data.txt":          "data\n",
		"ws/big.py":            strings.Repeat("#", 5000),
		"outside/secret.py":    "TOKEN = 'host secret'\n",
	}
	for rel, content := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"ws/repros/evil.py":  filepath.Join(outside, "secret.py"),
		"ws/repros/alias.py": "2.py",
		"ws/repros/outdir":   outside,
	}
	for rel, target := range links {
		if err := os.Symlink(target, filepath.Join(root, rel)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "repros", "fifo.py"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, "dir.py"), 0o755); err != nil {
		t.Fatal(err)
	}
	return ws, outside
}

func paths(scripts []Script) []string {
	out := []string{}
	for _, s := range scripts {
		out = append(out, s.Path)
	}
	return out
}

func TestCollectScripts(t *testing.T) {
	ws, outside := workspace(t)
	for _, tc := range []struct {
		name    string
		words   []string
		workdir string
		want    []string
	}{
		{"reproducer with companions", []string{"python3", "repros/1.py"}, "", []string{"repros/1.py", "repros/1_app.py", "repros/1_check.py"}},
		{"companions only when present", []string{"python3", "repros/2.py"}, "", []string{"repros/2.py"}},
		{"relative to workdir", []string{"python3", "2.py"}, "repros", []string{"repros/2.py"}},
		{"absolute inside", []string{"cat", filepath.Join(ws, "data.txt")}, "", []string{"data.txt"}},
		{"dot-dot inside", []string{"cat", "../data.txt"}, filepath.Join(ws, "repros"), []string{"data.txt"}},
		{"dot-dot escape", []string{"python3", "../outside/secret.py"}, "", nil},
		{"absolute outside", []string{"python3", filepath.Join(outside, "secret.py")}, "", nil},
		{"symlink escaping", []string{"python3", "repros/evil.py"}, "", nil},
		{"directory symlink escaping", []string{"python3", "repros/outdir/secret.py"}, "", nil},
		{"symlink inside", []string{"python3", "repros/alias.py", "repros/2.py"}, "", []string{"repros/alias.py"}},
		{"fifo", []string{"python3", "repros/fifo.py"}, "", nil},
		{"directory", []string{"python3", "dir.py"}, "", nil},
		{"missing", []string{"python3", "repros/9.py"}, "", nil},
		{"workspace itself", []string{"ls", "."}, "", nil},
		{"inside a shell string", []string{"sh", "-c", "python3 repros/2.py|tee out.txt; cat 'data.txt'"}, "", []string{"repros/2.py", "data.txt"}},
		{"flag value", []string{"tool", "--input=data.txt"}, "", []string{"data.txt"}},
		{"triage.py run N", []string{"./triage.py", "run", "1"}, "", []string{"repros/1.py", "repros/1_app.py", "repros/1_check.py"}},
		{"triage.py browse N in a shell", []string{"sh", "-c", "./triage.py browse 2"}, "", []string{"repros/2.py"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []Script
			withinTime(t, 5*time.Second, func() {
				got = CollectScripts(context.Background(), tc.words, ws, tc.workdir, 0)
			})
			if g, w := strings.Join(paths(got), ","), strings.Join(tc.want, ","); g != w {
				t.Fatalf("got %q, want %q", g, w)
			}
			for _, s := range got {
				if strings.Contains(s.Content, "host secret") {
					t.Fatalf("read a file outside the workspace: %+v", s)
				}
				if s.Truncated {
					t.Errorf("%s truncated", s.Path)
				}
			}
		})
	}
	got := CollectScripts(context.Background(), []string{"repros/alias.py"}, ws, "", 0)
	if len(got) != 1 || got[0].Content != "print(2)\n" {
		t.Fatalf("symlink inside: %+v", got)
	}
}

func TestCollectScriptsCap(t *testing.T) {
	ws, _ := workspace(t)
	got := CollectScripts(context.Background(), []string{"python3", "big.py"}, ws, "", 1000)
	if len(got) != 1 || len(got[0].Content) != 1000 || !got[0].Truncated {
		t.Fatalf("%d scripts, first %d bytes truncated=%v", len(got), len(got[0].Content), got[0].Truncated)
	}
	got = CollectScripts(context.Background(), []string{"python3", "big.py"}, ws, "", 5000)
	if len(got[0].Content) != 5000 || got[0].Truncated {
		t.Fatalf("exact size: %d truncated=%v", len(got[0].Content), got[0].Truncated)
	}
}

// At most maxScripts files carry content; the rest are listed by path.
func TestCollectScriptsLimits(t *testing.T) {
	ws := t.TempDir()
	words := []string{"cat"}
	for i := range maxScripts + 4 {
		name := fmt.Sprintf("f%02d.txt", i)
		if err := os.WriteFile(filepath.Join(ws, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		words = append(words, name)
	}
	got := CollectScripts(context.Background(), words, ws, "", 0)
	if len(got) != maxScripts+4 {
		t.Fatalf("%d scripts", len(got))
	}
	for i, s := range got {
		if withContent := i < maxScripts; withContent != (s.Content != "") || withContent == s.Truncated {
			t.Errorf("%d %s: content %q truncated %v", i, s.Path, s.Content, s.Truncated)
		}
	}

	// The total budget: five full 200,000-byte files fill it.
	ws = t.TempDir()
	words = []string{"cat"}
	for i := range 6 {
		name := fmt.Sprintf("big%d.py", i)
		if err := os.WriteFile(filepath.Join(ws, name), []byte(strings.Repeat("x", DefaultScriptBytes)), 0o644); err != nil {
			t.Fatal(err)
		}
		words = append(words, name)
	}
	got = CollectScripts(context.Background(), words, ws, "", 0)
	total := 0
	for _, s := range got {
		total += len(s.Content)
	}
	if len(got) != 6 || total != maxScriptTotal || got[5].Content != "" || !got[5].Truncated {
		t.Fatalf("%d scripts, %d bytes, last %q/%v", len(got), total, got[5].Path, got[5].Truncated)
	}
}

func TestCollectScriptsWorkspaceThroughSymlink(t *testing.T) {
	ws, _ := workspace(t)
	link := filepath.Join(t.TempDir(), "wslink")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}
	got := CollectScripts(context.Background(), []string{"python3", "repros/2.py"}, link, "", 0)
	if len(got) != 1 || got[0].Path != "repros/2.py" {
		t.Fatalf("%+v", got)
	}
	got = CollectScripts(context.Background(), []string{"python3", filepath.Join(ws, "repros/2.py")}, link, "", 0)
	if len(got) != 1 || got[0].Path != "repros/2.py" {
		t.Fatalf("real path: %+v", got)
	}
}

func TestCollectScriptsCancelled(t *testing.T) {
	ws, _ := workspace(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := CollectScripts(ctx, []string{"repros/1.py"}, ws, "", 0); len(got) != 0 {
		t.Fatalf("%+v", got)
	}
	if got := CollectScripts(context.Background(), []string{"x"}, filepath.Join(ws, "missing"), "", 0); got != nil {
		t.Fatalf("missing workspace: %+v", got)
	}
}

// TestCollectScriptsInView: a file the sandbox may hold its own version of
// refuses the collection (as named, through a host symlink, where a
// missing file would be, past the listing bound); a hidden one is not
// shown; the rest is read as before.
func TestCollectScriptsInView(t *testing.T) {
	ws, _ := workspace(t)
	own := filepath.Join(ws, "repros")
	for rel, target := range map[string]string{"to-repros.py": "repros/2.py", "reprodir": "repros"} {
		if err := os.Symlink(target, filepath.Join(ws, rel)); err != nil {
			t.Fatal(err)
		}
	}
	view := func(path string) (Origin, string) {
		switch {
		case path == own || strings.HasPrefix(path, own+"/"):
			return FromSandbox, "the sandbox's own"
		case filepath.Base(path) == "data.txt":
			return Hidden, ""
		}
		return FromHost, ""
	}
	many := []string{"cat"}
	for i := range maxScripts + maxListed + 2 {
		name := fmt.Sprintf("f%02d.txt", i)
		if err := os.WriteFile(filepath.Join(ws, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		many = append(many, name)
	}
	for _, tc := range []struct {
		name    string
		words   []string
		refused string // the path the refusal names; "" for none
		want    []string
	}{
		{"named", []string{"python3", "repros/1.py"}, "repros/1.py", nil},
		{"missing on the host", []string{"sh", "-c", "sh repros/new.sh"}, "repros/new.sh", nil},
		{"through a host symlink", []string{"python3", "to-repros.py"}, "to-repros.py", nil},
		{"missing, through a symlinked directory", []string{"python3", "reprodir/new.py"}, "reprodir/new.py", nil},
		{"past the listing bound", append(many[:len(many):len(many)], "repros/2.py"), "repros/2.py", nil},
		{"hidden", []string{"cat", "data.txt", "big.py"}, "", []string{"big.py"}},
		{"the host's", []string{"python3", "big.py"}, "", []string{"big.py"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CollectScriptsIn(context.Background(), tc.words, ws, "", 0, view)
			var u *UnjudgeableError
			switch {
			case tc.refused == "":
				if err != nil {
					t.Fatalf("err %v", err)
				}
				if g, w := strings.Join(paths(got), ","), strings.Join(tc.want, ","); g != w {
					t.Fatalf("got %q, want %q", g, w)
				}
			case !errors.As(err, &u) || u.Path != tc.refused || u.Why != "the sandbox's own" || got != nil:
				t.Fatalf("err %v (%+v), scripts %v; want a refusal of %s", err, u, paths(got), tc.refused)
			}
		})
	}
	// No view: the host's copy, as CollectScripts.
	if got, err := CollectScriptsIn(context.Background(), []string{"python3", "repros/2.py"}, ws, "", 0, nil); err != nil || len(got) != 1 {
		t.Fatalf("no view: %v %v", paths(got), err)
	}
}
