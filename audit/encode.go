package audit

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
)

// encode is rec as json.Marshal writes it, without reflection for the
// usual record (a keeper writes one per session command, and the
// reflective encoding was most of the record's cost): the same fields,
// order, omissions and escaping (TestEncodeIsJSONMarshal,
// FuzzEncodeIsJSONMarshal). What it does not write by hand (network
// decisions, a time or a duration json would print another way or refuse)
// goes through json.Marshal whole.
func encode(rec Record) ([]byte, error) {
	y := rec.Time.Year()
	d := rec.DurationMS
	if len(rec.Network) > 0 || y < 0 || y > 9999 || math.IsNaN(d) || math.IsInf(d, 0) || (d != 0 && (math.Abs(d) < 1e-6 || math.Abs(d) >= 1e21)) {
		return json.Marshal(rec)
	}
	b := make([]byte, 0, 320)
	b = append(b, `{"time":"`...)
	b = rec.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","role":`...)
	b = appendString(b, string(rec.Role))
	b = append(b, `,"backend":`...)
	b = appendString(b, rec.Backend)
	if rec.Config != "" {
		b = append(b, `,"config":`...)
		b = appendString(b, rec.Config)
	}
	b = append(b, `,"argv":`...)
	if rec.Argv == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, a := range rec.Argv {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, a)
		}
		b = append(b, ']')
	}
	b = append(b, `,"policy_hash":`...)
	b = appendString(b, rec.PolicyHash)
	b = append(b, `,"gate":`...)
	b = appendString(b, rec.Gate)
	b = append(b, `,"exit_code":`...)
	b = strconv.AppendInt(b, int64(rec.ExitCode), 10)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendFloat(b, d, 'f', -1, 64)
	b = appendBool(b, `,"timed_out":`, rec.TimedOut)
	b = appendBool(b, `,"oom_killed":`, rec.OOMKilled)
	if rec.Canceled {
		b = append(b, `,"canceled":true`...)
	}
	if rec.OutputCeiling {
		b = append(b, `,"output_ceiling":true`...)
	}
	b = appendBool(b, `,"truncated":`, rec.Truncated)
	b = append(b, `,"stdout_bytes":`...)
	b = strconv.AppendInt(b, rec.StdoutBytes, 10)
	b = append(b, `,"stderr_bytes":`...)
	b = strconv.AppendInt(b, rec.StderrBytes, 10)
	if rec.Sandbox != "" {
		b = append(b, `,"sandbox":`...)
		b = appendString(b, rec.Sandbox)
	}
	if rec.Error != "" {
		b = append(b, `,"error":`...)
		b = appendString(b, rec.Error)
	}
	return append(b, '}'), nil
}

func appendBool(b []byte, key string, v bool) []byte {
	b = append(b, key...)
	return strconv.AppendBool(b, v)
}

// appendString is s as a JSON string: written as is when every byte is
// printable ASCII that json escapes not (no quote, backslash, <, > or &),
// else through json.Marshal, whose escaping it must match.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
