package config

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"512m", 512 << 20},
		{"512M", 512 << 20},
		{"512MiB", 512 << 20},
		{"2g", 2 << 30},
		{"2GB", 2 << 30},
		{"1.5g", 3 << 29},
		{"1048576", 1048576},
		{"64KiB", 64 << 10},
		{"64k", 64 << 10},
		{"100b", 100},
		{" 8 mib ", 8 << 20},
		{"0.5k", 512},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestParseSizeErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "invalid size"},
		{"m", "invalid size"},
		{"2x", "invalid size"},
		{"-1g", "invalid size"},
		{"1.2.3m", "invalid size"},
		{"2tb", "invalid size"},
		{"0", "greater than zero"},
		{"0.1b", "greater than zero"},
		{"9999999999999999999", "too large"},
		{"9000000000g", "too large"},
		{"1e3", "invalid size"},
	}
	for _, tt := range tests {
		_, err := ParseSize(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseSize(%q) error = %v, want %q", tt.in, err, tt.want)
		}
	}
}

// TestSizeKey checks the integer and string forms as a key value.
func TestSizeKey(t *testing.T) {
	f, err := Parse("triage.toml", []byte("[sandbox]\nmemory = 1048576\nshm_size = \"1.5g\"\n"), "/ws")
	if err != nil {
		t.Fatal(err)
	}
	if *f.Sandbox.Memory != 1048576 || *f.Sandbox.ShmSize != 1610612736 {
		t.Errorf("Memory, ShmSize = %d, %d", *f.Sandbox.Memory, *f.Sandbox.ShmSize)
	}
}
