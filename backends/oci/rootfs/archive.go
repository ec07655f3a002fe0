package rootfs

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/triage-sandbox/triage-sandbox/internal/progress"
)

// EnsureArchive is Ensure for an image stored in an archive instead of the
// daemon; see AcquireArchive.
func (c *Cache) EnsureArchive(ctx context.Context, archive, ref string) (string, error) {
	l, err := c.AcquireArchive(ctx, archive, ref)
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Root, nil
}

// AcquireArchive leases the root of an image read from archive, with no
// daemon: a `docker save` tarball (legacy or OCI-in-tar, whichever Docker
// wrote), or an OCI image layout, as a directory or a tar of one. ref picks
// the image when the archive holds several ("triage-sandbox:latest", or an
// OCI ref name); "" takes the only one. The cache key is the image ID (the
// digest of its config), as for the daemon, whose export additionally holds
// the few files Docker's init layer adds (/.dockerenv, empty /etc/hosts...).
//
// Layers are applied in order with their whiteouts; each layer's digest is
// checked against the config's diff_ids. gzip layers are read, zstd ones
// are refused (no decoder in the standard library).
func (c *Cache) AcquireArchive(ctx context.Context, archive, ref string) (*Lease, error) {
	abs, err := filepath.Abs(archive)
	if err != nil {
		return nil, fmt.Errorf("rootfs: %w", err)
	}
	st, err := openStore(abs)
	if err != nil {
		return nil, fmt.Errorf("rootfs: opening image archive %s: %w", archive, err)
	}
	defer st.Close()
	img, err := resolveImage(st, ref)
	if err != nil {
		return nil, fmt.Errorf("rootfs: image archive %s: %w", archive, err)
	}
	name := ref
	if name == "" {
		name = img.name
	}
	if name == "" {
		name = abs
	}
	return c.acquire(ctx, name, img.id, func(ctx context.Context, dst string) (Entry, error) {
		e, err := applyLayers(ctx, st, img, dst)
		e.Source = "archive:" + abs
		return e, err
	})
}

// store reads an archive's members by their path inside it.
type store interface {
	Open(name string) (io.ReadCloser, error)
	Close() error
}

func openStore(p string) (store, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		// os.Root keeps every read inside the layout, whatever its
		// symlinks say: the layout is as untrusted as the image.
		r, err := os.OpenRoot(p)
		if err != nil {
			return nil, err
		}
		return dirStore{r}, nil
	}
	return openTarStore(p)
}

type dirStore struct{ r *os.Root }

func (d dirStore) Open(name string) (io.ReadCloser, error) { return d.r.Open(name) }
func (d dirStore) Close() error                            { return d.r.Close() }

// tarStore serves members of a tar file in place: one pass records where
// each member's data starts, reads are then section reads.
type tarStore struct {
	f       *os.File
	members map[string]section
	links   map[string]string // symlinks and hard links: member -> target member
}

type section struct{ off, size int64 }

func openTarStore(p string) (*tarStore, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	t := &tarStore{f: f, members: map[string]section{}, links: map[string]string{}}
	// archive/tar reads headers block by block with no read-ahead and
	// skips data by seeking, so after Next the offset is the data's start.
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return t, nil
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		name := cleanMember(hdr.Name)
		switch hdr.Typeflag {
		case tar.TypeReg:
			off, err := f.Seek(0, io.SeekCurrent)
			if err != nil {
				f.Close()
				return nil, err
			}
			t.members[name] = section{off, hdr.Size}
		case tar.TypeSymlink:
			// docker save links a repeated layer to its first copy.
			t.links[name] = cleanMember(path.Join(path.Dir(name), hdr.Linkname))
		case tar.TypeLink:
			t.links[name] = cleanMember(hdr.Linkname)
		}
	}
}

func cleanMember(name string) string { return strings.TrimPrefix(path.Clean("/"+name), "/") }

func (t *tarStore) Open(name string) (io.ReadCloser, error) {
	name = cleanMember(name)
	for range 8 {
		if s, ok := t.members[name]; ok {
			return io.NopCloser(io.NewSectionReader(t.f, s.off, s.size)), nil
		}
		next, ok := t.links[name]
		if !ok {
			break
		}
		name = next
	}
	return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
}

func (t *tarStore) Close() error { return t.f.Close() }

// image is what resolveImage finds: its ID, config and layer blobs.
type image struct {
	name    string // a tag the archive gives it, if any
	id      string // sha256:<hex> of config
	diffIDs []string
	layers  []string // member paths, bottom first
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Annotations map[string]string `json:"annotations"`
	Platform    *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

type ociIndex struct {
	MediaType string       `json:"mediaType"`
	Manifests []descriptor `json:"manifests"`
}

type ociManifest struct {
	MediaType string       `json:"mediaType"`
	Config    descriptor   `json:"config"`
	Layers    []descriptor `json:"layers"`
}

type dockerManifest []struct {
	Config   string   `json:"Config"`
	RepoTags []string `json:"RepoTags"`
	Layers   []string `json:"Layers"`
}

type imageConfig struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	RootFS       struct {
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

const maxJSON = 16 << 20 // manifests and configs are kilobytes

func readJSON(st store, name string, v any) ([]byte, error) {
	r, err := st.Open(name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, maxJSON+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(b) > maxJSON {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, maxJSON)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", name, err)
	}
	return b, nil
}

// resolveImage reads manifest.json (docker save) when present, else the OCI
// index.json.
func resolveImage(st store, ref string) (image, error) {
	var dm dockerManifest
	if _, err := readJSON(st, "manifest.json", &dm); err == nil {
		return fromDockerManifest(st, dm, ref)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return image{}, err
	}
	var idx ociIndex
	if _, err := readJSON(st, "index.json", &idx); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return image{}, errors.New("neither manifest.json (docker save) nor index.json (OCI layout) found")
		}
		return image{}, err
	}
	return fromOCIIndex(st, idx, ref)
}

func fromDockerManifest(st store, dm dockerManifest, ref string) (image, error) {
	var pick []int
	for i, m := range dm {
		if ref == "" {
			pick = append(pick, i)
			continue
		}
		for _, t := range m.RepoTags {
			if normalizeRef(t) == normalizeRef(ref) {
				pick = append(pick, i)
				break
			}
		}
	}
	if len(pick) != 1 {
		return image{}, choiceError(len(pick), len(dm), ref)
	}
	m := dm[pick[0]]
	img := image{layers: m.Layers}
	if len(m.RepoTags) > 0 {
		img.name = m.RepoTags[0]
	}
	return withConfig(st, img, m.Config, "")
}

func fromOCIIndex(st store, idx ociIndex, ref string) (image, error) {
	var pick []descriptor
	for _, d := range idx.Manifests {
		if ref == "" || refMatches(d.Annotations, ref) {
			pick = append(pick, d)
		}
	}
	if len(pick) != 1 {
		return image{}, choiceError(len(pick), len(idx.Manifests), ref)
	}
	d := pick[0]
	name := d.Annotations["io.containerd.image.name"]
	// A multi-platform image: an index in the index. Take this machine's.
	for depth := 0; isIndex(d.MediaType); depth++ {
		if depth > 2 {
			return image{}, errors.New("image indexes nest too deep")
		}
		blob, err := blobPath(d.Digest)
		if err != nil {
			return image{}, err
		}
		var sub ociIndex
		if _, err := readJSON(st, blob, &sub); err != nil {
			return image{}, err
		}
		found := false
		for _, m := range sub.Manifests {
			if m.Platform != nil && m.Platform.OS == "linux" && m.Platform.Architecture == runtime.GOARCH {
				d, found = m, true
				break
			}
		}
		if !found {
			return image{}, fmt.Errorf("no linux/%s image in the index", runtime.GOARCH)
		}
	}
	blob, err := blobPath(d.Digest)
	if err != nil {
		return image{}, err
	}
	var m ociManifest
	if _, err := readJSON(st, blob, &m); err != nil {
		return image{}, err
	}
	img := image{name: name}
	for _, l := range m.Layers {
		if strings.Contains(l.MediaType, "zstd") {
			return image{}, fmt.Errorf("layer %s is zstd-compressed, which only the Docker daemon can unpack here", l.Digest)
		}
		p, err := blobPath(l.Digest)
		if err != nil {
			return image{}, err
		}
		img.layers = append(img.layers, p)
	}
	cfg, err := blobPath(m.Config.Digest)
	if err != nil {
		return image{}, err
	}
	return withConfig(st, img, cfg, m.Config.Digest)
}

// withConfig reads the config: its digest is the image ID, its diff_ids
// what each layer must hash to.
func withConfig(st store, img image, name, want string) (image, error) {
	var cfg imageConfig
	b, err := readJSON(st, name, &cfg)
	if err != nil {
		return image{}, err
	}
	sum := sha256.Sum256(b)
	img.id = "sha256:" + hex.EncodeToString(sum[:])
	if want != "" && want != img.id {
		return image{}, fmt.Errorf("config %s has digest %s", want, img.id)
	}
	if cfg.OS != "" && cfg.OS != "linux" {
		return image{}, fmt.Errorf("image is for %s, not linux", cfg.OS)
	}
	if len(cfg.RootFS.DiffIDs) != len(img.layers) {
		return image{}, fmt.Errorf("config lists %d layers, the manifest %d", len(cfg.RootFS.DiffIDs), len(img.layers))
	}
	img.diffIDs = cfg.RootFS.DiffIDs
	return img, nil
}

func choiceError(n, total int, ref string) error {
	if n == 0 {
		return fmt.Errorf("no image tagged %q among %d", ref, total)
	}
	if ref == "" {
		return fmt.Errorf("%d images: name one", n)
	}
	return fmt.Errorf("%d images match %q", n, ref)
}

func isIndex(mt string) bool {
	return mt == "application/vnd.oci.image.index.v1+json" || mt == "application/vnd.docker.distribution.manifest.list.v2+json"
}

func blobPath(digest string) (string, error) {
	h, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || !isHexID(h) {
		return "", fmt.Errorf("unsupported digest %q", digest)
	}
	return "blobs/sha256/" + h, nil
}

// normalizeRef makes "docker.io/library/x", "x" and "x:latest" compare equal.
func normalizeRef(r string) string {
	r = strings.TrimPrefix(r, "docker.io/")
	r = strings.TrimPrefix(r, "library/")
	if !strings.Contains(r, "@") && !strings.Contains(r[strings.LastIndex(r, "/")+1:], ":") {
		r += ":latest"
	}
	return r
}

// refMatches: containerd names the full reference, the OCI annotation is
// either that or just the tag.
func refMatches(ann map[string]string, ref string) bool {
	if n := ann["io.containerd.image.name"]; n != "" && normalizeRef(n) == normalizeRef(ref) {
		return true
	}
	n := ann["org.opencontainers.image.ref.name"]
	if n == "" {
		return false
	}
	if normalizeRef(n) == normalizeRef(ref) {
		return true
	}
	_, tag, _ := strings.Cut(normalizeRef(ref)[strings.LastIndex(normalizeRef(ref), "/")+1:], ":")
	return n == tag
}

// applyLayers unpacks img's layers into dst, bottom first, checking each
// against its diff_id. The digest in the Entry covers the blobs as stored.
func applyLayers(ctx context.Context, st store, img image, dst string) (Entry, error) {
	x, err := newExtractor(dst, true)
	if err != nil {
		return Entry{}, err
	}
	defer x.close()
	stored := &hashCounter{h: sha256.New()}
	rep := progress.From(ctx)
	defer rep.Done()
	for i, name := range img.layers {
		report := func(n int64) {
			rep.Step("unpacking the image root: layer %d of %d, %s", i+1, len(img.layers), progress.Bytes(n))
		}
		if err := applyLayer(ctx, st, x, name, img.diffIDs[i], stored, report); err != nil {
			return Entry{}, fmt.Errorf("layer %d (%s): %w", i+1, name, err)
		}
	}
	if err := x.finish(); err != nil {
		return Entry{}, err
	}
	s := x.stats
	return Entry{SHA256: stored.digest(), Bytes: stored.n, Files: s.Files + s.Symlinks + s.Hardlinks, Stats: s}, nil
}

func applyLayer(ctx context.Context, st store, x *extractor, name, diffID string, stored io.Writer, report func(int64)) error {
	rc, err := st.Open(name)
	if err != nil {
		return err
	}
	defer rc.Close()
	br := bufio.NewReaderSize(io.TeeReader(&progress.Counter{R: rc, Report: report}, stored), 1<<20)
	var r io.Reader = br
	magic, _ := br.Peek(4)
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return err
		}
		defer zr.Close()
		r = zr
	case bytes.Equal(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return errors.New("zstd-compressed: only the Docker daemon can unpack it here")
	}
	diff := &hashCounter{h: sha256.New()}
	tee := io.TeeReader(r, diff)
	if err := x.apply(ctx, tee); err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, tee); err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, br); err != nil { // the stored digest covers the whole blob
		return err
	}
	if got := diff.digest(); got != diffID {
		return fmt.Errorf("content digest %s, the config says %s", got, diffID)
	}
	return nil
}
