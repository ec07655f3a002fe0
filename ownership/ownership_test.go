package ownership

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestStaleDirs(t *testing.T) {
	type rec struct {
		Live bool `json:"live"`
	}
	parent := t.TempDir()
	mk := func(name, record string, age time.Duration) {
		dir := filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if record != "" {
			if err := os.WriteFile(filepath.Join(dir, "owner.json"), []byte(record), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		when := time.Now().Add(-age)
		if err := os.Chtimes(dir, when, when); err != nil {
			t.Fatal(err)
		}
	}
	mk("run-live", `{"live":true}`, 0)
	mk("run-dead", `{"live":false}`, 0)
	mk("run-half-new", "", 0)
	mk("run-half-old", "{not json", 2*halfWrittenAge)
	mk("other-dead", `{"live":false}`, 0)
	if err := os.WriteFile(filepath.Join(parent, "run-file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	stale, err := StaleDirs(parent, "owner.json", func(n string) bool { return n[:4] == "run-" }, func(r rec) bool { return r.Live })
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range stale {
		names = append(names, s.Name)
		if s.Name == "run-dead" && !s.Readable {
			t.Errorf("run-dead's record was not read")
		}
	}
	slices.Sort(names)
	if want := []string{"run-dead", "run-half-old"}; !slices.Equal(names, want) {
		t.Fatalf("stale = %v, want %v", names, want)
	}
	if s, err := StaleDirs[rec](filepath.Join(parent, "missing"), "owner.json", nil, func(rec) bool { return true }); err != nil || s != nil {
		t.Fatalf("a missing parent: %v %v", s, err)
	}
}
