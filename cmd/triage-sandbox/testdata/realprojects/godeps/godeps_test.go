package godeps

import "testing"

func TestWelcome(t *testing.T) {
	got := Welcome("ada", "bob")
	if len(got) != 2 || got[0] != "hello, ada" || got[1] != "hello, bob" {
		t.Fatalf("Welcome: %q", got)
	}
}
