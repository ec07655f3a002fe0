package guard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

func cachedConfig(t *testing.T, url string) Config {
	cfg := testConfig(t, url)
	cfg.CachePath = filepath.Join(t.TempDir(), ".triage", "guard-cache.json")
	cfg.CacheSecret = testSecret
	return cfg
}

func TestCacheHitSkipsTheModel(t *testing.T) {
	srv := newFakeModel(t, answering(allowAnswer))
	cfg := cachedConfig(t, srv.URL)
	g := mustNew(t, cfg)
	first := judge(t, g, sampleRequest())
	second := judge(t, g, sampleRequest())
	if !first.Allowed || first.Cached || !second.Allowed || !second.Cached || srv.hits.Load() != 1 {
		t.Fatalf("first %+v second %+v hits %d", first, second, srv.hits.Load())
	}
	if *second.Scores != *first.Scores {
		t.Errorf("cached scores %+v, first %+v", second.Scores, first.Scores)
	}
	// Persistent: a new Guard (another process) reads the file.
	third := judge(t, mustNew(t, cfg), sampleRequest())
	if !third.Cached || srv.hits.Load() != 1 {
		t.Fatalf("new guard: %+v hits %d", third, srv.hits.Load())
	}
	if st, err := os.Stat(cfg.CachePath); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("cache file: %v %v", st, err)
	}
}

func TestCacheMemoryOnly(t *testing.T) {
	srv := newFakeModel(t, answering(allowAnswer))
	g := mustNew(t, testConfig(t, srv.URL))
	judge(t, g, sampleRequest())
	if v := judge(t, g, sampleRequest()); !v.Cached || srv.hits.Load() != 1 {
		t.Fatalf("%+v hits %d", v, srv.hits.Load())
	}
}

func TestCacheMissesOnAnyChange(t *testing.T) {
	srv := newFakeModel(t, answering(allowAnswer))
	cfg := cachedConfig(t, srv.URL)
	g := mustNew(t, cfg)
	judge(t, g, sampleRequest())
	changes := map[string]func(*Request){
		"script content": func(r *Request) { r.Scripts[0].Content += "import os\n" },
		"script path":    func(r *Request) { r.Scripts[0].Path = "repros/2.py" },
		"truncated":      func(r *Request) { r.Scripts[0].Truncated = true },
		"extra script":   func(r *Request) { r.Scripts = append(r.Scripts, Script{Path: "a.py"}) },
		"command":        func(r *Request) { r.Command += " --fast" },
		"task":           func(r *Request) { r.Task += "!" },
	}
	for name, change := range changes {
		req := sampleRequest()
		change(&req)
		if v := judge(t, g, req); v.Cached {
			t.Errorf("%s: served from cache", name)
		}
	}
	if got := srv.hits.Load(); got != int32(1+len(changes)) {
		t.Errorf("hits %d", got)
	}
	// Another model does not get this model's scores.
	cfg.Model = "other-model"
	if v := judge(t, mustNew(t, cfg), sampleRequest()); v.Cached {
		t.Error("other model served from cache")
	}
}

// Scores are cached, thresholds applied on each hit.
func TestCacheReappliesThresholds(t *testing.T) {
	srv := newFakeModel(t, answering(`{"safe":0.6,"exfiltration":0.5,"destructive":0.1,"injection":0.1}`))
	cfg := cachedConfig(t, srv.URL)
	if v := judge(t, mustNew(t, cfg), sampleRequest()); !v.Allowed {
		t.Fatalf("blocked: %s", v.Reason)
	}
	cfg.MaxRisk = 0.4
	v := judge(t, mustNew(t, cfg), sampleRequest())
	if v.Allowed || !v.Cached || !strings.Contains(v.Reason, "exfiltration 0.5 > max_risk 0.4") || srv.hits.Load() != 1 {
		t.Fatalf("%+v hits %d", v, srv.hits.Load())
	}
}

func TestCacheCorruptOrForgedIsIgnored(t *testing.T) {
	req := sampleRequest()
	for name, content := range map[string]func(key string) string{
		"garbage":       func(string) string { return "{not json" },
		"wrong version": func(string) string { return `{"version":2,"entries":[]}` },
		"unsigned allow": func(key string) string {
			return fmt.Sprintf(`{"version":1,"entries":[{"key":%q,"scores":{"safe":1,"exfiltration":0,"destructive":0,"injection":0},"mac":""}]}`, key)
		},
		"signed with another secret": func(key string) string {
			c := newCache("", bytes.Repeat([]byte("z"), 32))
			s := Scores{Safe: 1}
			return fmt.Sprintf(`{"version":1,"entries":[{"key":%q,"scores":{"safe":1,"exfiltration":0,"destructive":0,"injection":0},"mac":%q}]}`, key, c.sign(key, s))
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := newFakeModel(t, answering(blockAnswer))
			cfg := cachedConfig(t, srv.URL)
			g := mustNew(t, cfg)
			user, _ := encodeUserData(req)
			key := cacheKey(g.judgeID, user)
			if err := os.MkdirAll(filepath.Dir(cfg.CachePath), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cfg.CachePath, []byte(content(key)), 0o644); err != nil {
				t.Fatal(err)
			}
			v := judge(t, g, req)
			if v.Allowed || v.Cached || srv.hits.Load() != 1 {
				t.Fatalf("%+v hits %d", v, srv.hits.Load())
			}
			// Rewritten whole and valid.
			var f cacheFile
			data, _ := os.ReadFile(cfg.CachePath)
			if err := json.Unmarshal(data, &f); err != nil || len(f.Entries) != 1 || f.Entries[0].Scores.Safe != 0.1 {
				t.Fatalf("cache after: %s (%v)", data, err)
			}
		})
	}
}

// One forged entry spoils the whole file: nothing is trusted partially.
func TestCacheOneBadEntryDropsAll(t *testing.T) {
	srv := newFakeModel(t, answering(allowAnswer))
	cfg := cachedConfig(t, srv.URL)
	judge(t, mustNew(t, cfg), sampleRequest())
	data, _ := os.ReadFile(cfg.CachePath)
	var f cacheFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	f.Entries = append(f.Entries, cacheEntry{Key: strings.Repeat("a", 64), Scores: Scores{Safe: 1}, MAC: "00"})
	data, _ = json.Marshal(f)
	if err := os.WriteFile(cfg.CachePath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if v := judge(t, mustNew(t, cfg), sampleRequest()); v.Cached {
		t.Fatal("served from a cache holding a forged entry")
	}
}

func TestCacheUnavailableIsNotCached(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	srv := newFakeModel(t, func(w http.ResponseWriter, r *http.Request) {
		if fail.Load() {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		answering(allowAnswer)(w, r)
	})
	cfg := cachedConfig(t, srv.URL)
	g := mustNew(t, cfg)
	if v := judge(t, g, sampleRequest()); v.Allowed {
		t.Fatal("allowed on HTTP 500")
	}
	if _, err := os.Stat(cfg.CachePath); !os.IsNotExist(err) {
		t.Fatalf("cache written for an unavailable verdict: %v", err)
	}
	fail.Store(false)
	v := judge(t, g, sampleRequest())
	if !v.Allowed || v.Cached || srv.hits.Load() != 2 {
		t.Fatalf("%+v hits %d", v, srv.hits.Load())
	}
	// A malformed answer is not cached either.
	srv2 := newFakeModel(t, answering(`{"safe":0.9}`))
	cfg2 := cachedConfig(t, srv2.URL)
	g2 := mustNew(t, cfg2)
	judge(t, g2, sampleRequest())
	judge(t, g2, sampleRequest())
	if srv2.hits.Load() != 2 {
		t.Fatalf("malformed answer cached: hits %d", srv2.hits.Load())
	}
}

func TestCacheKeepsTheNewest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.json")
	c := newCache(path, testSecret)
	for i := range cacheLimit + 5 {
		c.scores[fmt.Sprintf("%064x", i)] = Scores{Safe: 1}
		c.order = append(c.order, fmt.Sprintf("%064x", i))
	}
	c.loaded = true
	if err := c.put(fmt.Sprintf("%064x", 99999), Scores{Safe: 0.5}); err != nil {
		t.Fatal(err)
	}
	got := newCache(path, testSecret).readFile()
	if len(got) != cacheLimit || got[len(got)-1].Key != fmt.Sprintf("%064x", 99999) || got[0].Key != fmt.Sprintf("%064x", 6) {
		t.Fatalf("%d entries, first %s", len(got), got[0].Key)
	}
}

// A symlink planted at the cache path is replaced, never written through.
func TestCacheSymlinkNotFollowed(t *testing.T) {
	srv := newFakeModel(t, answering(allowAnswer))
	cfg := cachedConfig(t, srv.URL)
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("host file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(cfg.CachePath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, cfg.CachePath); err != nil {
		t.Fatal(err)
	}
	judge(t, mustNew(t, cfg), sampleRequest())
	if b, _ := os.ReadFile(victim); string(b) != "host file\n" {
		t.Fatalf("victim changed: %q", b)
	}
	if st, err := os.Lstat(cfg.CachePath); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("cache path: %v %v", st, err)
	}
}

// A symlinked cache directory is refused: Judge reports it, the verdict
// stands.
func TestCacheSymlinkedDirectoryRefused(t *testing.T) {
	srv := newFakeModel(t, answering(allowAnswer))
	cfg := cachedConfig(t, srv.URL)
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Dir(cfg.CachePath)); err != nil {
		t.Fatal(err)
	}
	v, err := mustNew(t, cfg).Judge(t.Context(), sampleRequest())
	if err == nil || !strings.Contains(err.Error(), "guard cache") || !v.Allowed {
		t.Fatalf("verdict %+v err %v", v, err)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Fatalf("wrote through the symlink: %v", entries)
	}
}

func TestLoadCacheSecret(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "conf", "guard-cache.key")
	a, err := LoadCacheSecret(path)
	if err != nil || len(a) != 32 {
		t.Fatalf("%x %v", a, err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %o", st.Mode().Perm())
	}
	b, err := LoadCacheSecret(path)
	if err != nil || !bytes.Equal(a, b) {
		t.Fatalf("second load %x %v", b, err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCacheSecret(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("group-readable secret: %v", err)
	}
	link := filepath.Join(dir, "link.key")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCacheSecret(link); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("symlinked secret: %v", err)
	}
	short := filepath.Join(dir, "short.key")
	if err := os.WriteFile(short, []byte("abcd\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCacheSecret(short); err == nil {
		t.Error("short secret accepted")
	}
}
