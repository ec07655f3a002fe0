package procargs

import (
	"encoding/binary"
	"slices"
	"testing"
)

func buffer(argc int32, rest string) []byte {
	b := binary.NativeEndian.AppendUint32(nil, uint32(argc))
	return append(b, rest...)
}

func TestParse(t *testing.T) {
	tests := []struct {
		name      string
		b         []byte
		argv, env []string
	}{
		{"argv and env", buffer(2, "/bin/sleep\x00\x00\x00sleep\x005\x00A=1\x00B=2\x00\x00\x00"), []string{"sleep", "5"}, []string{"A=1", "B=2"}},
		{"no env", buffer(1, "/bin/x\x00x\x00"), []string{"x"}, nil},
		{"truncated", buffer(3, "/bin/x\x00x\x00"), []string{"x"}, nil},
		{"too short", []byte{1, 0}, nil, nil},
		{"no path end", buffer(1, "/bin/x"), nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			argv, env := Parse(tt.b)
			if !slices.Equal(argv, tt.argv) || !slices.Equal(env, tt.env) {
				t.Fatalf("Parse = %q %q, want %q %q", argv, env, tt.argv, tt.env)
			}
		})
	}
}
