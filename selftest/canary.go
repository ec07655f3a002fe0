package selftest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/triage-sandbox/triage-sandbox/inside/probe"
)

// Canaries are the fakes a selftest plants for one role: a home with canary
// content in every credential path, a workspace and a checkout, canary
// secrets for the environment, listeners on this machine's addresses, agent
// sockets and a sentinel process. Nothing real is read or changed.
type Canaries struct {
	Dir      string // everything below lives here (never under /tmp: that is scratch inside)
	Home     string
	Root     string
	Checkout string
	Runner   string // a fake CI runner temp dir ($GITHUB_ENV lives here)
	// ToolPrefix is a fake tool prefix mounted read_only (a node or a
	// python under /opt), its npmrc and pip.conf holding the token (FS-13).
	ToolPrefix string
	// DeviceNode is a live host device node in the tool prefix
	// (plantDeviceNode), "" where none could be made: PRIV-05 opens it
	// where a sandbox's mountinfo cannot show nodev.
	DeviceNode string
	Token      string // appears in every canary file
	// SentinelToken is only in the sentinel's environment and argv (never in
	// a probe's own argv), so finding it means seeing a host process.
	SentinelToken string
	// Env are canary secrets set in the environment the sandbox starts from.
	Env map[string]string
	// Loopback and Remote are TCP listeners on 127.0.0.1 and on this
	// machine's other addresses (the docker bridge gateway among them).
	Loopback *Listener
	Remote   []*Listener
	Sockets  []string // unix listeners planted in the home (ssh/gpg agents, a session bus)
	// MountSocket is a unix listener inside a mounted directory (the
	// workspace root's .git).
	MountSocket string
	// RuntimeSockets are container-runtime socket canaries in the home,
	// where macOS's runtimes keep theirs (none on Linux: /var/run).
	RuntimeSockets []string
	sockLns        []net.Listener
	Sentinel       *exec.Cmd // a host process holding the token in its env and argv
	// DeepSockets are counting unix listeners at several depths under the
	// checkout (its top, deep in its .git, a nested directory).
	DeepSockets []*UnixListener
	// FD is the descriptor canary every process started from here inherits.
	FD *FDCanary
	// WorldReadable plants the home and credentials readable by anyone, as a
	// caller's own files are to a sandbox running as that caller; tests use
	// it so only the mount stands between the sandbox and the canary.
	WorldReadable bool
}

// Credential files planted in the fake home, relative to it.
var credentialFiles = []string{
	".ssh/id_selftest_canary", ".config/gh/hosts.yml", ".git-credentials", ".netrc",
	".aws/credentials", ".docker/config.json", ".kube/config", ".pypirc", ".gnupg/canary.key",
	".config/gcloud/credentials.db", ".azure/accessTokens.json", ".config/ai-triager/keys.toml",
	".config/triage-sandbox/state.json",
}

// toolPrefixFiles are the tool configs planted in the fake tool prefix,
// relative to it: npm's globalconfig and pip's site config with a token.
func toolPrefixFiles(token string) map[string]string {
	return map[string]string{
		"etc/npmrc": "//registry.npmjs.org/:_authToken=" + token + "\n",
		"pip.conf":  "[global]\nindex-url = https://selftest:" + token + "@pypi.invalid/simple\n",
	}
}

// checkoutGitCredentials is what a CI checkout leaves in .git/config
// (actions/checkout persists its token as an extraheader; a clone's URL
// may carry one; a helper may keep a store in the repository), and the
// store's name. The marker is not "# selftest": Replant keeps it.
const checkoutGitCredentials = "; credentials a CI checkout persists (FS-12)\n" +
	"[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: bearer %[1]s\n" +
	"[remote \"origin\"]\n\turl = https://x-access-token:%[1]s@github.com/selftest/widgets\n" +
	"[credential]\n\thelper = store --file .git/selftest-credentials\n"

// gitStoreFile is the store the planted helper names, in the checkout.
const gitStoreFile = ".git/selftest-credentials"

// Home dotfiles a hostile command would like to change.
var homeDotfiles = []string{".bashrc", ".profile", ".gitconfig"}

func randomToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "canary-" + hex.EncodeToString(b[:])
}

// Plant creates a fresh canary set. base is where to put it ("" = /var/tmp);
// self is the probe binary (the sentinel runs it).
func Plant(base, self string) (*Canaries, error) {
	if base == "" {
		base = "/var/tmp"
	}
	sweepLeftovers(base, KillByToken)
	dir, err := os.MkdirTemp(base, canaryPrefix)
	if err != nil {
		return nil, fmt.Errorf("creating the canary directory: %w", err)
	}
	// The sandbox identity must traverse to the workspace, as it would in a
	// real home; the fake home itself stays private.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	c := &Canaries{
		Dir: dir, Home: filepath.Join(dir, "home"), Root: filepath.Join(dir, "ws"),
		Checkout: filepath.Join(dir, "checkout"), Runner: filepath.Join(dir, "runner"),
		ToolPrefix: filepath.Join(dir, "toolprefix"),
		Token:      randomToken(), SentinelToken: randomToken(),
	}
	c.Env = map[string]string{
		"GITHUB_TOKEN":               "ghp_" + c.Token,
		"ANTHROPIC_API_KEY":          "sk-ant-" + c.Token,
		"OPENAI_API_KEY":             "sk-" + c.Token,
		"TRIAGE_GITHUB_TOKEN":        "triage-" + c.Token,
		"TRIAGE_SELFTEST_CANARY_KEY": "key-" + c.Token,
		// Secret-shaped names that are not exact credential words.
		"TRIAGE_APITOKEN":       "apitoken-" + c.Token,
		"TRIAGE_GHPAT":          "ghpat-" + c.Token,
		"TRIAGE_PRIVKEY":        "privkey-" + c.Token,
		"TRIAGE_DATABASE_URL":   "postgres://triage:pw-" + c.Token + "@127.0.0.1/triage",
		"AWS_SECRET_ACCESS_KEY": "aws-" + c.Token,
		"GITHUB_ENV":            filepath.Join(c.Runner, "github_env"),
	}
	// First: a kill from here on leaves what the next Plant sweeps.
	if err := c.writeOwner(); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.plantFiles(); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.plantGit(); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.listen(); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.startSentinel(self); err != nil {
		c.Close()
		return nil, err
	}
	// Last, so the sentinel does not hold it: from here on every process
	// this one starts inherits it, the sandbox's helpers included.
	if err := c.openFDCanary(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// plantFiles (re)writes every canary file to its original content and
// removes anything a probe may have added. Replant calls it between the
// control and the sandbox run.
func (c *Canaries) plantFiles() error {
	for _, d := range []string{c.Home, c.Root, c.Checkout, c.Runner} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	dirMode, secretMode := os.FileMode(0o700), os.FileMode(0o600)
	if c.WorldReadable {
		dirMode, secretMode = 0o755, 0o644
	}
	if err := os.Chmod(c.Home, dirMode); err != nil {
		return err
	}
	write := func(path, content string, mode os.FileMode) error {
		dm := os.FileMode(0o755)
		if strings.HasPrefix(path, c.Home+"/") {
			dm = dirMode
		}
		if err := os.MkdirAll(filepath.Dir(path), dm); err != nil {
			return err
		}
		if err := os.Chmod(filepath.Dir(path), dm); err != nil {
			return err
		}
		_ = os.Remove(path)
		if err := os.WriteFile(path, []byte(content), mode); err != nil {
			return err
		}
		return os.Chmod(path, mode)
	}
	for _, f := range credentialFiles {
		if err := write(filepath.Join(c.Home, f), "selftest canary "+c.Token+"\n", secretMode); err != nil {
			return err
		}
	}
	for _, f := range homeDotfiles {
		if err := write(filepath.Join(c.Home, f), "# selftest canary dotfile\n", 0o644); err != nil {
			return err
		}
	}
	// Readable by anyone, as a system prefix's files are: only the mask
	// stands between the sandbox and the token.
	for f, content := range toolPrefixFiles(c.Token) {
		if err := write(filepath.Join(c.ToolPrefix, f), content, 0o644); err != nil {
			return err
		}
	}
	c.DeviceNode = plantDeviceNode(c.ToolPrefix)
	for name, content := range map[string]string{
		"README.md": "# widgets\nselftest canary checkout " + c.Token + "\n",
		"setup.py":  "print('widgets')\n",
	} {
		if err := write(filepath.Join(c.Checkout, name), content, 0o644); err != nil {
			return err
		}
	}
	if err := write(filepath.Join(c.Root, "triage.toml"), "# selftest workspace\n", 0o644); err != nil {
		return err
	}
	return write(c.Env["GITHUB_ENV"], "", 0o666)
}

// plantGit makes the checkout a git repository with one commit, so the
// read-only git control has something to read and hooks/config something
// to poison.
func (c *Canaries) plantGit() error {
	git, err := exec.LookPath("git")
	if err != nil {
		// No git on the host: a bare layout still lets the write probes run.
		for _, d := range []string{".git/hooks", ".git/objects", ".git/refs"} {
			if err := os.MkdirAll(filepath.Join(c.Checkout, d), 0o755); err != nil {
				return err
			}
		}
		if err := os.WriteFile(filepath.Join(c.Checkout, ".git/config"), []byte("[core]\n"), 0o644); err != nil {
			return err
		}
		return c.plantGitCredentials()
	}
	env := append(os.Environ(), "GIT_AUTHOR_NAME=selftest", "GIT_AUTHOR_EMAIL=selftest@invalid",
		"GIT_COMMITTER_NAME=selftest", "GIT_COMMITTER_EMAIL=selftest@invalid", "GIT_CONFIG_NOSYSTEM=1", "HOME="+c.Dir)
	for _, args := range [][]string{
		{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "selftest canary"},
	} {
		cmd := exec.Command(git, args...)
		cmd.Dir, cmd.Env = c.Checkout, env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s in the canary checkout: %v: %s", args[0], err, out)
		}
	}
	if err := os.MkdirAll(filepath.Join(c.Checkout, ".git/hooks"), 0o755); err != nil {
		return err
	}
	return c.plantGitCredentials()
}

// plantGitCredentials appends a CI checkout's credentials to the canary
// checkout's .git/config and writes the store its helper names.
func (c *Canaries) plantGitCredentials() error {
	f, err := os.OpenFile(filepath.Join(c.Checkout, ".git/config"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, checkoutGitCredentials, c.Token)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("planting the checkout's git credentials: %w", err)
	}
	return os.WriteFile(filepath.Join(c.Checkout, gitStoreFile), []byte("https://x-access-token:"+c.Token+"@github.com\n"), 0o644)
}

// Replant restores the canary files after the control run.
func (c *Canaries) Replant() error {
	// Remove whatever the control added under the home and the checkout's
	// planted paths, then write everything again.
	for _, p := range []string{".local", ".config/pip", ".ssh/authorized_keys"} {
		_ = os.RemoveAll(filepath.Join(c.Home, p))
	}
	for _, p := range []string{"evil.txt", ".envrc", ".vscode", ".github", ".git/hooks/pre-commit"} {
		_ = os.RemoveAll(filepath.Join(c.Checkout, p))
	}
	_ = os.Remove(filepath.Join(c.Root, "evil.txt"))
	if err := c.plantFiles(); err != nil {
		return err
	}
	// The control may have appended to .git/config; rewrite it from git.
	if _, err := exec.LookPath("git"); err == nil {
		cfg := filepath.Join(c.Checkout, ".git/config")
		b, err := os.ReadFile(cfg)
		if err == nil {
			if i := strings.Index(string(b), "# selftest"); i >= 0 {
				_ = os.WriteFile(cfg, b[:i], 0o644)
			}
		}
	}
	return nil
}

func (c *Canaries) startSentinel(self string) error {
	c.Sentinel = exec.Command(self, probe.ChildSubcommand, "sleep", c.SentinelToken, "3600")
	c.Sentinel.Env = []string{"TRIAGE_SELFTEST_SENTINEL=" + c.SentinelToken}
	c.Sentinel.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Sentinel.Start(); err != nil {
		return fmt.Errorf("starting the sentinel process: %w", err)
	}
	return nil
}

// SentinelPID is the host sentinel's pid.
func (c *Canaries) SentinelPID() int { return c.Sentinel.Process.Pid }

// Close stops listeners and the sentinel and removes the canary directory.
func (c *Canaries) Close() {
	if c.Loopback != nil {
		c.Loopback.ln.Close()
	}
	for _, l := range c.Remote {
		l.ln.Close()
	}
	for _, l := range c.sockLns {
		l.Close()
	}
	for _, l := range c.DeepSockets {
		l.ln.Close()
	}
	c.closeFDCanary()
	if c.Sentinel != nil && c.Sentinel.Process != nil {
		_ = c.Sentinel.Process.Kill()
		_ = c.Sentinel.Wait()
	}
	KillByToken(sandboxSurvivor + c.Token)
	KillByToken(controlSurvivor + c.Token)
	_ = os.RemoveAll(c.Dir)
}

// Snapshot hashes every file under the home, checkout and workspace root,
// skipping the given writable paths (they may change).
func (c *Canaries) Snapshot(writable []string) (map[string]string, error) {
	out := map[string]string{}
	for _, top := range []string{c.Home, c.Checkout, c.Root, c.Runner} {
		err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			for _, w := range writable {
				if p == w {
					if d.IsDir() {
						return filepath.SkipDir
					}
					return nil
				}
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			sig := fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
			if fi.Mode().IsRegular() {
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				sum := sha256.Sum256(b)
				sig += " " + hex.EncodeToString(sum[:8])
			}
			out[p] = sig
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("hashing %s: %w", top, err)
		}
	}
	return out, nil
}

// Changed lists paths added, removed or modified between two snapshots.
func Changed(before, after map[string]string) []string {
	var out []string
	for p, sig := range after {
		if before[p] != sig {
			out = append(out, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// KillByToken kills every process whose argv holds token, until none is left (bounded).
func KillByToken(token string) {
	// A token is a canary's, 31 characters and more: a short one would
	// match unrelated processes' argv, and nothing is killed for it.
	if len(token) < len("canary-")+24 {
		return
	}
	// Each pass kills what it finds, so a process that appeared after the
	// first scan (a spawn still on its way) is killed too, not left to be
	// taken for the next phase's survivor.
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids := Survivors(token)
		if len(pids) == 0 || !time.Now().Before(deadline) {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
