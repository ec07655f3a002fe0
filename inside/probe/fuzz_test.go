package probe

import (
	"bytes"
	"testing"
)

// FuzzParseObservations reads what a probe inside the sandbox printed (the
// sandbox controls it): never a panic, and only observations with an id.
func FuzzParseObservations(f *testing.F) {
	for _, s := range []string{`{"id":"FS-01","errno":"ENOENT"}`, "noise\n{\"id\":\"x\"}", `{"id":`, `[]`, `{"id":"a"}{"id":"a","errno":"EPERM"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		obs, _ := ParseObservations(bytes.NewReader(b))
		for id, o := range obs {
			if id == "" || o.ID != id {
				t.Fatalf("observation %+v under id %q", o, id)
			}
		}
	})
}
