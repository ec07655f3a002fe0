//go:build linux

package integration_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/triage-sandbox/triage-sandbox/backends"
	"github.com/triage-sandbox/triage-sandbox/internal/testenv"
	"github.com/triage-sandbox/triage-sandbox/sandbox"
)

// The agent's writable files take rename-based edits (sed -i, os.replace),
// what it writes beside them is discarded and said so, and the writable
// paths hold no more than their bound, in bytes and in files, whatever a
// run tries (the hostile review wrote 3 GiB, a 1 TiB sparse file and
// 100,000 files onto the host).
func TestStagedWritablePaths(t *testing.T) {
	forEachBackend(t, func(t *testing.T, k *kit) {
		f := newFixture(t)
		for _, name := range []string{"NOTES.md", "INDEX.md"} {
			if err := os.WriteFile(filepath.Join(f.root, name), []byte("# "+name+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(filepath.Join(f.root, "repros"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(f.root, "repros", "old.py"), []byte("print(1)\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		p := k.build(t, f, "agent", currentHost(t))
		p.Staging.Size, p.Staging.Inodes = 8<<20, 300
		script := `
sed -i 's/NOTES/notes edited/' NOTES.md && echo "sed ok"
python3 -c "import os; open('INDEX.tmp','w').write('replaced'); os.replace('INDEX.tmp','INDEX.md')" && echo "replace ok"
echo junk > junk.txt
dd if=/dev/zero of=repros/big bs=1M count=64 2>/dev/null || echo "bytes bounded"
rm -f repros/big
i=0; while [ $i -lt 400 ]; do touch repros/f$i 2>/dev/null || break; i=$((i+1)); done; echo "files $i"
rm -f repros/f*
truncate -s 1T repros/sparse 2>/dev/null || echo "sparse bounded"
rm -f repros/sparse
rm repros/old.py
echo new > repros/new.py
ln -s /etc/passwd NOTES.link 2>/dev/null
exit 0`
		out, shown := k.runOutcome(t, p, "sh", "-c", script)
		if out.ExitCode != 0 {
			t.Fatalf("exit %d: %s", out.ExitCode, shown)
		}
		for _, want := range []string{"sed ok", "replace ok", "bytes bounded", "sparse bounded"} {
			if !strings.Contains(shown, want) {
				t.Errorf("missing %q in %q", want, shown)
			}
		}
		if strings.Contains(shown, "files 400") {
			t.Errorf("the inode bound did not hold: %q", shown)
		}
		read := func(rel string) string {
			b, err := os.ReadFile(filepath.Join(f.root, rel))
			if err != nil {
				return err.Error()
			}
			return string(b)
		}
		if got := read("NOTES.md"); got != "# notes edited.md\n" {
			t.Errorf("NOTES.md = %q", got)
		}
		if got := read("INDEX.md"); got != "replaced" {
			t.Errorf("INDEX.md = %q", got)
		}
		if got := read("repros/new.py"); got != "new\n" {
			t.Errorf("repros/new.py = %q", got)
		}
		for _, gone := range []string{"repros/old.py", "junk.txt", "NOTES.link", "repros/big", "repros/sparse"} {
			if _, err := os.Lstat(filepath.Join(f.root, gone)); !os.IsNotExist(err) {
				t.Errorf("%s on the host: %v", gone, err)
			}
		}
		if !strings.Contains(strings.Join(out.Warnings, "\n"), "junk.txt") {
			t.Errorf("the discarded write is not reported: %q", out.Warnings)
		}
		if fi, err := os.Lstat(filepath.Join(f.root, "NOTES.md")); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("NOTES.md is no longer a regular file: %v %v", fi, err)
		}
	})
}

// What the host changes in a writable path while a run works on its copy
// wins over the run's version, and is reported.
func TestStagedHostChangesWin(t *testing.T) {
	forEachBackend(t, func(t *testing.T, k *kit) {
		f := newFixture(t)
		if err := os.MkdirAll(filepath.Join(f.root, "repros"), 0o755); err != nil {
			t.Fatal(err)
		}
		shared := filepath.Join(f.root, "repros", "shared.txt")
		if err := os.WriteFile(shared, []byte("v1"), 0o644); err != nil {
			t.Fatal(err)
		}
		p := k.build(t, f, "reproducer", currentHost(t))
		// The command writes its version, then waits for the host's change.
		sess, err := sandbox.Start(context.Background(), k.b, p, backends.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		id := sess.Sandbox().ID()
		w := k.watch()
		w.startedAs(t, id)
		closed := false
		defer func() {
			if !closed {
				sess.Close(context.Background())
			}
		}()
		if err := os.WriteFile(shared, []byte("host v2"), 0o644); err != nil {
			t.Fatal(err)
		}
		var buf testenv.Buffer
		out, err := sess.Exec(context.Background(), sandbox.Request{
			Command: backends.Command{Argv: []string{"sh", "-c", "cat repros/shared.txt; echo sandbox > repros/shared.txt"}},
			Streams: backends.Streams{Stdout: &buf, Stderr: &buf},
		})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "v1") {
			t.Errorf("the sandbox did not see its copy: %q", buf.String())
		}
		if b, _ := os.ReadFile(shared); string(b) != "host v2" {
			t.Errorf("shared.txt = %q, the host's change must stay", b)
		}
		found := false
		for _, c := range out.Conflicts {
			if c.Path == shared && c.Action == "conflict" && c.KeptAs != "" {
				found = true
				if b, _ := os.ReadFile(c.KeptAs); string(b) != "sandbox\n" {
					t.Errorf("the sandbox's version kept as %s = %q", c.KeptAs, b)
				}
			}
		}
		if !found {
			t.Errorf("the conflict is not reported with the sandbox's version kept: %+v", out.Conflicts)
		}
		closed = true
		if err := sess.Close(context.Background()); err != nil {
			t.Errorf("closing the sandbox: %v", err)
		}
		if out.Sandbox != "" && out.Sandbox != id {
			t.Errorf("the result names sandbox %q, the session %q", out.Sandbox, id)
		}
		k.assertGone(t, id, w)
	})
}

// A staged copy over its bound is refused with the holder's word and what
// to do (raise writable_size), on every backend, one-shot or a session:
// not with the broken pipe the host's write met once the holder gave up
// (3 MiB: the write breaks off), nor as a command whose result is unknown
// (just over the bound: the write fits the pipe and returns before the
// holder gives up), nor minutes later (docker's attach stream took the
// bytes of the container that was gone for 127 s). Nothing ran.
func TestStagedCopyOverItsBound(t *testing.T) {
	forEachBackend(t, func(t *testing.T, k *kit) {
		for _, size := range []int{3 << 20, 1<<20 + 12<<10} {
			for _, opts := range []backends.StartOptions{{OneShot: true}, {}} {
				f := newFixture(t)
				if err := os.MkdirAll(filepath.Join(f.root, "repros"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(f.root, "repros", "big"), bytes.Repeat([]byte("x"), size), 0o644); err != nil {
					t.Fatal(err)
				}
				p := k.build(t, f, "reproducer", currentHost(t))
				p.Staging.Size = 1 << 20
				what := fmt.Sprintf("%d bytes, one-shot %v", size, opts.OneShot)
				w := k.watch()
				began := time.Now()
				sess, err := sandbox.Start(context.Background(), k.b, p, opts)
				// A liveness bound, not a speed figure: docker's attach
				// stream held the refused copy's write for 127 s.
				if took := time.Since(began); took > 45*time.Second {
					t.Errorf("%s: the refusal took %s", what, took.Round(time.Second))
				}
				if err == nil {
					var out testenv.Buffer
					w.startedAs(t, sess.Sandbox().ID())
					_, err = sess.Exec(context.Background(), sandbox.Request{Command: backends.Command{Argv: []string{"sh", "-c", "echo ran"}},
						Streams: backends.Streams{Stdout: &out, Stderr: &out}, NoAudit: true})
					if strings.Contains(out.String(), "ran") {
						t.Errorf("%s: the command ran on a copy over its bound", what)
					}
					sess.Close(context.Background())
					k.assertGone(t, sess.Sandbox().ID(), w)
				}
				if err == nil || !strings.Contains(err.Error(), "writable_size") ||
					strings.Contains(err.Error(), "broken pipe") || strings.Contains(err.Error(), "result is unknown") {
					t.Errorf("%s: %v; want the holder's word, with what to do", what, err)
				}
			}
		}
	})
}
