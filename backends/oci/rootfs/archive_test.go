package rootfs

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// testLayers: the second layer deletes etc/a, makes d opaque (only its own
// d/z survives), and hard-links a file of the first layer.
func testLayers(t testing.TB) [][]byte {
	return [][]byte{
		mkTar(t, dir("etc/", 0o755), file("etc/a", "a", 0o644), file("etc/b", "bee", 0o644),
			dir("d/", 0o755), file("d/x", "x", 0o644), file("d/y", "y", 0o644), dir("keep/", 0o755), file("keep/k", "k", 0o600)),
		mkTar(t, file("etc/.wh.a", "", 0o644), dir("d/", 0o700), file("d/.wh..wh..opq", "", 0o644), file("d/z", "z", 0o644),
			file("etc/c", "c", 0o644), hardlink("etc/b2", "etc/b"), file("keep/.wh.never-there", "", 0o644)),
		mkTar(t), // empty layers are common (ENV, CMD...)
	}
}

func wantTree(t *testing.T, root string) {
	t.Helper()
	var got []string
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if rel != "." {
			got = append(got, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	want := []string{"d", "d/z", "etc", "etc/b", "etc/b2", "etc/c", "keep", "keep/k"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("tree %v, want %v", got, want)
	}
	if st, err := os.Stat(filepath.Join(root, "d")); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("d: the upper layer's mode should win: %v %v", st.Mode(), err)
	}
	a, _ := os.Stat(filepath.Join(root, "etc/b"))
	b, _ := os.Stat(filepath.Join(root, "etc/b2"))
	if a == nil || b == nil || !os.SameFile(a, b) {
		t.Error("etc/b2 is not a hard link of the lower layer's etc/b")
	}
}

func configFor(layers [][]byte) []byte {
	var diffs []string
	for _, l := range layers {
		diffs = append(diffs, digest(l))
	}
	b, _ := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux",
		"rootfs": map[string]any{"type": "layers", "diff_ids": diffs},
	})
	return b
}

// dockerSaveTar writes what Docker 20.10's `docker save` writes: legacy
// directories with layer.tar, a repeated layer as a symlink to its first copy.
func dockerSaveTar(t *testing.T, layers [][]byte, config []byte) string {
	t.Helper()
	layers = append(layers, layers[len(layers)-1]) // the repeat
	var ents []ent
	var paths []string
	for i, l := range layers {
		v1 := strings.Repeat(string(rune('a'+i)), 64)
		ents = append(ents, dir(v1+"/", 0o755))
		if i == len(layers)-1 {
			ents = append(ents, symlink(v1+"/layer.tar", "../"+strings.Repeat(string(rune('a'+i-1)), 64)+"/layer.tar"))
		} else {
			ents = append(ents, file(v1+"/layer.tar", string(l), 0o644))
		}
		paths = append(paths, v1+"/layer.tar")
	}
	var cfg map[string]any
	_ = json.Unmarshal(config, &cfg)
	cfg["rootfs"].(map[string]any)["diff_ids"] = append(cfg["rootfs"].(map[string]any)["diff_ids"].([]any), digest(layers[len(layers)-1]))
	config, _ = json.Marshal(cfg)
	cfgName := strings.TrimPrefix(digest(config), "sha256:") + ".json"
	man, _ := json.Marshal([]map[string]any{{"Config": cfgName, "RepoTags": []string{"rootfs-test:v1"}, "Layers": paths}})
	ents = append(ents, file(cfgName, string(config), 0o644), file("manifest.json", string(man), 0o644),
		file("repositories", `{"rootfs-test":{"v1":"x"}}`, 0o644))
	p := filepath.Join(t.TempDir(), "save.tar")
	if err := os.WriteFile(p, mkTar(t, ents...), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ociLayout writes an OCI image layout directory, the first layer gzipped.
func ociLayout(t *testing.T, layers [][]byte, config []byte) string {
	t.Helper()
	d := t.TempDir()
	if err := os.MkdirAll(filepath.Join(d, "blobs", "sha256"), 0o755); err != nil {
		t.Fatal(err)
	}
	blob := func(b []byte) string {
		dg := digest(b)
		if err := os.WriteFile(filepath.Join(d, "blobs", "sha256", strings.TrimPrefix(dg, "sha256:")), b, 0o644); err != nil {
			t.Fatal(err)
		}
		return dg
	}
	var descs []map[string]any
	for i, l := range layers {
		mt := "application/vnd.oci.image.layer.v1.tar"
		if i == 0 {
			var gz bytes.Buffer
			zw := gzip.NewWriter(&gz)
			zw.Write(l)
			zw.Close()
			l, mt = gz.Bytes(), mt+"+gzip"
		}
		descs = append(descs, map[string]any{"mediaType": mt, "digest": blob(l), "size": len(l)})
	}
	man, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": blob(config), "size": len(config)},
		"layers": descs,
	})
	idx, _ := json.Marshal(map[string]any{"schemaVersion": 2, "manifests": []map[string]any{{
		"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": blob(man), "size": len(man),
		"annotations": map[string]string{"org.opencontainers.image.ref.name": "v1"},
	}}})
	os.WriteFile(filepath.Join(d, "index.json"), idx, 0o644)
	os.WriteFile(filepath.Join(d, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644)
	return d
}

// tarDir packs a directory of regular files (an OCI layout) into a tar.
func tarDir(t *testing.T, d string) string {
	t.Helper()
	var ents []ent
	filepath.Walk(d, func(p string, info os.FileInfo, err error) error {
		rel, _ := filepath.Rel(d, p)
		if err == nil && info.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			ents = append(ents, file(rel, string(b), 0o644))
		}
		return err
	})
	p := filepath.Join(t.TempDir(), "oci.tar")
	os.WriteFile(p, mkTar(t, ents...), 0o644)
	return p
}

func TestArchiveDockerSave(t *testing.T) {
	layers := testLayers(t)
	p := dockerSaveTar(t, layers, configFor(layers))
	c := &Cache{Dir: t.TempDir()}
	ctx := context.Background()
	if _, err := c.AcquireArchive(ctx, p, "other:v1"); err == nil || !strings.Contains(err.Error(), "no image tagged") {
		t.Fatalf("unknown tag: %v", err)
	}
	l, err := c.AcquireArchive(ctx, p, "docker.io/library/rootfs-test:v1")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if !l.Unpacked || l.Entry.Image != "docker.io/library/rootfs-test:v1" || !strings.HasPrefix(l.Entry.Source, "archive:") {
		t.Errorf("lease %+v", l)
	}
	wantTree(t, l.Root)
	again, err := c.EnsureArchive(ctx, p, "")
	if err != nil || again != l.Root {
		t.Fatalf("second use: %q, %v", again, err)
	}
}

func TestArchiveOCILayout(t *testing.T) {
	layers := testLayers(t)
	cfg := configFor(layers)
	d := ociLayout(t, layers, cfg)
	for name, p := range map[string]string{"dir": d, "tar": tarDir(t, d)} {
		t.Run(name, func(t *testing.T) {
			c := &Cache{Dir: t.TempDir()}
			for _, ref := range []string{"v1", "rootfs-test:v1", ""} {
				l, err := c.AcquireArchive(context.Background(), p, ref)
				if err != nil {
					t.Fatalf("ref %q: %v", ref, err)
				}
				if l.ID != digest(cfg) {
					t.Errorf("id %s, want the config digest %s", l.ID, digest(cfg))
				}
				if l.Unpacked != (ref == "v1") {
					t.Errorf("ref %q: unpacked %v", ref, l.Unpacked)
				}
				wantTree(t, l.Root)
				l.Close()
			}
		})
	}
}

func TestArchiveRejectsBadContent(t *testing.T) {
	layers := testLayers(t)
	cases := map[string]func() string{
		"diff_id mismatch": func() string {
			cfg := configFor(layers)
			bad := append([][]byte{mkTar(t, file("etc/evil", "x", 0o644))}, layers[1:]...)
			return ociLayout(t, bad, cfg) // the config still lists the good layer's digest
		},
		"hostile layer": func() string {
			bad := [][]byte{mkTar(t, file("../../escape", "x", 0o644))}
			return ociLayout(t, bad, configFor(bad))
		},
		"zstd layer": func() string {
			bad := [][]byte{append([]byte{0x28, 0xb5, 0x2f, 0xfd}, make([]byte, 64)...)}
			return dockerSaveTar(t, bad, configFor(bad)) // ociLayout would gzip it
		},
		"not an image": func() string { return t.TempDir() },
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			c := &Cache{Dir: t.TempDir()}
			if _, err := c.EnsureArchive(context.Background(), mk(), ""); err == nil {
				t.Fatal("accepted")
			} else {
				t.Log(err)
			}
			names, _ := os.ReadDir(c.Dir)
			for _, n := range names {
				if !strings.HasSuffix(n.Name(), ".lock") {
					t.Errorf("left %s in the cache", n.Name())
				}
			}
		})
	}
}

func TestTarStoreOffsets(t *testing.T) {
	big := strings.Repeat("0123456789", 1000)
	p := filepath.Join(t.TempDir(), "a.tar")
	os.WriteFile(p, mkTar(t, file("./one", big, 0o644), file("two", "second", 0o644), symlink("dir/three", "../two"),
		ent{hdr: tar.Header{Typeflag: tar.TypeReg, Name: strings.Repeat("long/", 30) + "four", Size: 4, Mode: 0o644,
			PAXRecords: map[string]string{"comment": strings.Repeat("x", 2000)}, ModTime: time.Unix(0, 0)}, body: "four"}), 0o644)
	st, err := openTarStore(p)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for name, want := range map[string]string{"one": big, "two": "second", "dir/three": "second", strings.Repeat("long/", 30) + "four": "four"} {
		r, err := st.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		b.ReadFrom(r)
		if b.String() != want {
			t.Errorf("%s: got %d bytes %.20q", name, b.Len(), b.String())
		}
	}
	if _, err := st.Open("../etc/passwd"); err == nil {
		t.Error("opened a name outside the archive")
	}
}
