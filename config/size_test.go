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
	f, err := Parse("triage.toml", []byte("[sandbox]\nmemory = 8388608\nshm_size = \"1.5g\"\n"), "/ws")
	if err != nil {
		t.Fatal(err)
	}
	if *f.Sandbox.Memory != 8388608 || *f.Sandbox.ShmSize != 1610612736 {
		t.Errorf("Memory, ShmSize = %d, %d", *f.Sandbox.Memory, *f.Sandbox.ShmSize)
	}
}

// TestSizeMinimums: a size below its key's minimum (most often a unit
// forgotten) is refused at load time with the line, the key and an
// example, before a runtime refuses it naming no key.
func TestSizeMinimums(t *testing.T) {
	tests := []struct {
		line string
		want string // "" = accepted
	}{
		{`memory = 2`, `triage.toml:2: sandbox.memory: memory = 2 is 2 bytes (a size without a unit is a byte count), below the 6 MiB minimum; write e.g. "2g"`},
		{`memory = "2"`, `triage.toml:2: sandbox.memory: memory = "2" is 2 bytes (a size without a unit is a byte count), below the 6 MiB minimum; write e.g. "2g"`},
		{`memory = "1k"`, `triage.toml:2: sandbox.memory: memory = "1k" is 1 KiB, below the 6 MiB minimum; write e.g. "2g"`},
		{`memory = "6m"`, ""},
		{`memory = 2147483648`, ""},
		{`tmpfs_size = 256`, `triage.toml:2: sandbox.tmpfs_size: tmpfs_size = 256 is 256 bytes (a size without a unit is a byte count), below the 1 MiB minimum; write e.g. "256m"`},
		{`shm_size = "64k"`, ""},
		{`shm_size = "1k"`, `below the 64 KiB minimum; write e.g. "64m"`},
		{`file_size = 1`, `file_size = 1 is 1 byte (a size without a unit is a byte count), below the 1 MiB minimum`},
		{`writable_size = "512k"`, `below the 1 MiB minimum; write e.g. "256m"`},
		{`output_limit = 64`, `below the 1 KiB minimum; write e.g. "64k"`},
		{`output_limit = "64k"`, ""},
		{`output_ceiling = "8k"`, `below the 64 KiB minimum; write e.g. "1g"`},
		{`pids = 4`, `triage.toml:2: sandbox.pids: must be between 8 and 4194304, got 4; e.g. pids = 256`},
		{`pids = 256`, ""},
		{`cpus = 0.001`, `must be between 0.01 and 4096`},
		{`timeout = 0`, `must be between 1 and 86400 seconds`},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			_, err := Parse("triage.toml", []byte("[sandbox]\n"+tt.line+"\n"), "/ws")
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want %q", err, tt.want)
			case err != nil && strings.Contains(err.Error(), "\n"):
				t.Fatalf("more than one line: %q", err)
			}
		})
	}
}
