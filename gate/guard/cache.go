package guard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

const (
	cacheLimit   = 2000     // entries kept, newest last (as ai-triager)
	cacheMaxFile = 16 << 20 // a full cache is ~400 KiB
	cacheVersion = 1
)

// The cache keeps scores, not verdicts: thresholds are applied on every
// hit, so changing min_safe or max_risk takes effect at once. Only scores
// from a well-formed answer are stored; an unavailable model is never
// cached.

type cacheFile struct {
	Version int          `json:"version"`
	Entries []cacheEntry `json:"entries"`
}

type cacheEntry struct {
	Key    string `json:"key"`
	Scores Scores `json:"scores"`
	MAC    string `json:"mac"`
}

type cache struct {
	mu     sync.Mutex
	path   string // "" = memory only
	secret []byte
	loaded bool
	order  []string // keys, oldest first
	scores map[string]Scores
}

func newCache(path string, secret []byte) *cache {
	return &cache{path: path, secret: slices.Clone(secret), scores: map[string]Scores{}}
}

// cacheKey is the sha256 of the canonical request, the judge (model and
// transport) and the prompt version.
func cacheKey(judgeID string, user []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "triage-sandbox guard v1\x00%s\x00%s\x00", promptID(), judgeID)
	h.Write(user)
	return hex.EncodeToString(h.Sum(nil))
}

func (c *cache) get(key string) (Scores, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.loaded {
		c.loaded = true
		c.adopt(c.readFile())
	}
	s, ok := c.scores[key]
	return s, ok
}

// put records scores for key and rewrites the file, merged with what other
// processes wrote to it meanwhile.
func (c *cache) put(key string, s Scores) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loaded = true
	mem := c.entries()
	c.order, c.scores = nil, map[string]Scores{}
	c.adopt(c.readFile())
	c.adopt(mem)
	c.adopt([]cacheEntry{{Key: key, Scores: s}})
	if c.path == "" {
		return nil
	}
	return c.writeFile()
}

// adopt adds entries in order, a repeated key moving to the newest end, and
// drops the oldest beyond cacheLimit.
func (c *cache) adopt(entries []cacheEntry) {
	for _, e := range entries {
		if _, ok := c.scores[e.Key]; ok {
			c.order = slices.DeleteFunc(c.order, func(k string) bool { return k == e.Key })
		}
		c.order = append(c.order, e.Key)
		c.scores[e.Key] = e.Scores
	}
	if n := len(c.order) - cacheLimit; n > 0 {
		for _, k := range c.order[:n] {
			delete(c.scores, k)
		}
		c.order = slices.Clone(c.order[n:])
	}
}

func (c *cache) entries() []cacheEntry {
	out := make([]cacheEntry, 0, len(c.order))
	for _, k := range c.order {
		out = append(out, cacheEntry{Key: k, Scores: c.scores[k]})
	}
	return out
}

// readFile returns the file's entries, or nil when it is missing, not a
// regular file, corrupt, or any entry fails its signature: a cache is
// trusted whole or not at all.
func (c *cache) readFile() []cacheEntry {
	if c.path == "" {
		return nil
	}
	dirfd, err := openParent(c.path, false)
	if err != nil {
		return nil
	}
	defer unix.Close(dirfd)
	data, truncated, err := readRegularAt(dirfd, filepath.Base(c.path), c.path, cacheMaxFile)
	if err != nil || truncated {
		return nil
	}
	var f cacheFile
	if err := json.Unmarshal(data, &f); err != nil || f.Version != cacheVersion {
		return nil
	}
	for _, e := range f.Entries {
		if len(e.Key) != sha256.Size*2 || !e.Scores.valid() || !hmac.Equal([]byte(e.MAC), []byte(c.sign(e.Key, e.Scores))) {
			return nil
		}
	}
	return f.Entries
}

func (c *cache) writeFile() error {
	f := cacheFile{Version: cacheVersion, Entries: c.entries()}
	for i := range f.Entries {
		f.Entries[i].MAC = c.sign(f.Entries[i].Key, f.Entries[i].Scores)
	}
	data, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("guard cache: %w", err)
	}
	dirfd, err := openParent(c.path, true)
	if err != nil {
		return fmt.Errorf("guard cache: %w", err)
	}
	defer unix.Close(dirfd)
	if err := replaceAt(dirfd, filepath.Base(c.path), c.path, data); err != nil {
		return fmt.Errorf("guard cache: %w", err)
	}
	return nil
}

// sign is the entry's HMAC-SHA256 under the cache secret.
func (c *cache) sign(key string, s Scores) string {
	m := hmac.New(sha256.New, c.secret)
	b, _ := json.Marshal(s) // four float64s always encode
	fmt.Fprintf(m, "triage-sandbox guard cache v1\x00%s\x00%s", key, b)
	return hex.EncodeToString(m.Sum(nil))
}

// LoadCacheSecret reads the cache secret at path, creating it (32 random
// bytes, hex, mode 0600, parent directories 0700) when missing. Keep it
// outside anything the sandbox can read or write, e.g. under the user's
// config directory: whoever holds it can forge cached verdicts. A symlink,
// FIFO or a file readable by group or others is refused.
func LoadCacheSecret(path string) ([]byte, error) {
	dirfd, err := openParent(path, true)
	if err != nil {
		return nil, fmt.Errorf("guard cache secret: %w", err)
	}
	defer unix.Close(dirfd)
	name := filepath.Base(path)
	fd, err := unix.Openat(dirfd, name, readFlags, 0)
	if errors.Is(err, unix.ENOENT) {
		if err := createSecret(dirfd, name, path); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("guard cache secret: %w", err)
		}
		fd, err = unix.Openat(dirfd, name, readFlags, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("guard cache secret: %w", describe(path, "a regular file", err))
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("guard cache secret: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("guard cache secret: %s is not a regular file", path)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("guard cache secret: %s is accessible by group or others (mode %o); chmod 600 it", path, st.Mode().Perm())
	}
	buf, err := io.ReadAll(io.LimitReader(f, 1024))
	if err != nil {
		return nil, fmt.Errorf("guard cache secret: reading %s: %w", path, err)
	}
	secret, err := hex.DecodeString(strings.TrimSpace(string(buf)))
	if err != nil || len(secret) < minSecretBytes {
		return nil, fmt.Errorf("guard cache secret: %s does not hold at least %d hex-encoded bytes; remove it to make a new one", path, minSecretBytes)
	}
	return secret, nil
}

func createSecret(dirfd int, name, shown string) error {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return err
	}
	fd, err := unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), shown)
	_, err = f.WriteString(hex.EncodeToString(raw[:]) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = unix.Unlinkat(dirfd, name, 0)
	}
	return err
}
