//go:build unix

package stage

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkApplyManyFiles copies back an export of many empty files, the
// shape of a sandbox that fills its inode bound.
func BenchmarkApplyManyFiles(b *testing.B) {
	const files = 5000
	for b.Loop() {
		b.StopTimer()
		root := b.TempDir()
		dir := filepath.Join(root, "repros")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		rel := strings.TrimPrefix(dir, "/")
		_ = tw.WriteHeader(&tar.Header{Name: rel + "/fill", Typeflag: tar.TypeDir, Mode: 0o755})
		for i := range files {
			_ = tw.WriteHeader(&tar.Header{Name: rel + "/fill/" + strconv.Itoa(i), Typeflag: tar.TypeReg, Mode: 0o644})
		}
		writeEnd(tw)
		tw.Close()
		spec := Spec{Paths: []Path{{dir, KindDir}}, UID: os.Getuid(), GID: os.Getgid()}
		b.StartTimer()
		if _, _, err := Apply(context.Background(), &buf, Manifest{}, spec); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/files, "µs/file")
}
