package fastpath

import (
	"strconv"
	"unicode/utf8"
)

// Encode is the request as encoding/json writes it, byte for byte
// (TestEncodeIsJSONMarshal, FuzzEncodeRequest), without its reflection:
// in a process that lives for one request every json.Marshal is a first
// one, which builds the type's encoder (about 0.1 ms of the front's start).
// It sets this build's protocol version, as SetProtocol does.
func (r *Request) Encode() []byte {
	r.SetProtocol()
	n := 64 + len(r.Cwd) + len(r.CLI)
	for _, s := range r.Args {
		n += len(s) + 3
	}
	for _, s := range r.Env {
		n += len(s) + 3
	}
	b := make([]byte, 0, n)
	b = append(b, `{"protocol":`...)
	b = strconv.AppendInt(b, int64(r.Protocol), 10)
	b = append(b, `,"args":`...)
	b = appendStrings(b, r.Args)
	b = append(b, `,"cwd":`...)
	b = appendString(b, r.Cwd)
	b = append(b, `,"env":`...)
	b = appendStrings(b, r.Env)
	b = append(b, `,"cli":`...)
	b = appendString(b, r.CLI)
	return append(b, '}')
}

// appendStrings writes ss as a JSON array (null for nil, as json.Marshal).
func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

const hexDigits = "0123456789abcdef"

// appendString writes s as encoding/json does (its HTML escaping
// included): quotes and backslashes escaped, control bytes as \b, \f, \n,
// \r, \t or \u00XX, <, > and & as \u00XX, invalid UTF-8 as \ufffd, and
// U+2028 and U+2029 as \u2028 and \u2029.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
