package fastpath

import (
	"strconv"
	"strings"
)

// decodeCanonical reads b when it is exactly what Encode writes for plain
// strings: `{"protocol":N,"args":[...],"cwd":"...","env":[...],"cli":"..."}`,
// no space, those keys in that order, every string printable ASCII with no
// escape. Anything else (ok false) is left to the strict reflective
// decoder, which then decides as it always did; what this reads, that
// decoder reads alike (FuzzDecodeCanonical). The keeper decodes one
// request per session command, and json's reflection was about 5% of its
// CPU per command.
func decodeCanonical(b []byte) (r Request, ok bool) {
	s := string(b)
	var n string
	if s, ok = strings.CutPrefix(s, `{"protocol":`); !ok {
		return r, false
	}
	i := 0
	for i < len(s) && i < 9 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if n, s = s[:i], s[i:]; n == "" || (n[0] == '0' && len(n) > 1) {
		return r, false
	}
	r.Protocol, _ = strconv.Atoi(n) // at most 9 digits: fits
	if s, ok = strings.CutPrefix(s, `,"args":`); !ok {
		return r, false
	}
	if r.Args, s, ok = plainStrings(s); !ok {
		return r, false
	}
	if s, ok = strings.CutPrefix(s, `,"cwd":`); !ok {
		return r, false
	}
	if r.Cwd, s, ok = plainString(s); !ok {
		return r, false
	}
	if s, ok = strings.CutPrefix(s, `,"env":`); !ok {
		return r, false
	}
	if r.Env, s, ok = plainStrings(s); !ok {
		return r, false
	}
	if s, ok = strings.CutPrefix(s, `,"cli":`); !ok {
		return r, false
	}
	if r.CLI, s, ok = plainString(s); !ok || s != "}" {
		return r, false
	}
	return r, true
}

// plainStrings reads a JSON array of plain strings (or null) at the start
// of s, and what follows it.
func plainStrings(s string) ([]string, string, bool) {
	if rest, ok := strings.CutPrefix(s, "null"); ok {
		return nil, rest, true
	}
	if !strings.HasPrefix(s, "[") {
		return nil, s, false
	}
	s = s[1:]
	out := []string{}
	if rest, ok := strings.CutPrefix(s, "]"); ok {
		return out, rest, true
	}
	for {
		v, rest, ok := plainString(s)
		if !ok {
			return nil, s, false
		}
		out = append(out, v)
		switch {
		case strings.HasPrefix(rest, ","):
			s = rest[1:]
		case strings.HasPrefix(rest, "]"):
			return out, rest[1:], true
		default:
			return nil, s, false
		}
	}
}

// plainString reads a JSON string at the start of s whose bytes are all
// printable ASCII, with no escape, and what follows it.
func plainString(s string) (string, string, bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", s, false
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return s[1:i], s[i+1:], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return "", s, false
		}
	}
	return "", s, false
}
