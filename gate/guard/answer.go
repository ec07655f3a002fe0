package guard

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Scores are the model's four probabilities, each in [0,1].
type Scores struct {
	Safe         float64 `json:"safe"`
	Exfiltration float64 `json:"exfiltration"`
	Destructive  float64 `json:"destructive"`
	Injection    float64 `json:"injection"`
}

// valid reports whether every score is a number in [0,1] (NaN is not).
func (s Scores) valid() bool {
	for _, v := range []float64{s.Safe, s.Exfiltration, s.Destructive, s.Injection} {
		if !(v >= 0 && v <= 1) {
			return false
		}
	}
	return true
}

// parseAnswer reads the model's answer strictly: one JSON object with
// exactly the four keys, each a number in [0,1], once. Surrounding
// whitespace and one ``` or ```json fence are tolerated, nothing else:
// prose, extra keys, duplicates, strings or trailing text mean the model did
// not clearly answer, and the caller blocks.
func parseAnswer(text []byte) (Scores, error) {
	body, err := unfence(string(text))
	if err != nil {
		return Scores{}, err
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return Scores{}, errors.New("answer is not a JSON object")
	}
	var s Scores
	fields := map[string]*float64{
		"safe": &s.Safe, "exfiltration": &s.Exfiltration,
		"destructive": &s.Destructive, "injection": &s.Injection,
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Scores{}, fmt.Errorf("answer is not valid JSON: %v", err)
		}
		key, _ := tok.(string)
		dst, ok := fields[key]
		if !ok {
			return Scores{}, fmt.Errorf("answer has an unexpected key %q", clip(key, 40))
		}
		if seen[key] {
			return Scores{}, fmt.Errorf("answer repeats %q", key)
		}
		seen[key] = true
		tok, err = dec.Token()
		if err != nil {
			return Scores{}, fmt.Errorf("answer is not valid JSON: %v", err)
		}
		num, ok := tok.(json.Number)
		if !ok {
			return Scores{}, fmt.Errorf("answer's %q is not a number", key)
		}
		f, err := strconv.ParseFloat(string(num), 64)
		if err != nil || !(f >= 0 && f <= 1) {
			return Scores{}, fmt.Errorf("answer's %q is %s, not between 0 and 1", key, clip(string(num), 40))
		}
		*dst = f
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return Scores{}, errors.New("answer is not valid JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return Scores{}, errors.New("answer has text after the JSON object")
	}
	for _, k := range []string{"safe", "exfiltration", "destructive", "injection"} {
		if !seen[k] {
			return Scores{}, fmt.Errorf("answer lacks %q", k)
		}
	}
	return s, nil
}

// unfence strips surrounding whitespace and one Markdown code fence.
func unfence(text string) (string, error) {
	t := strings.TrimSpace(text)
	if t == "" {
		return "", errors.New("answer is empty")
	}
	if !strings.HasPrefix(t, "```") {
		return t, nil
	}
	first, rest, ok := strings.Cut(t, "\n")
	lang := strings.TrimSpace(strings.TrimPrefix(first, "```"))
	if !ok || (lang != "" && !strings.EqualFold(lang, "json")) || !strings.HasSuffix(rest, "```") {
		return "", errors.New("answer is not a bare or fenced JSON object")
	}
	inner := strings.TrimSuffix(rest, "```")
	if strings.Contains(inner, "```") {
		return "", errors.New("answer is not a bare or fenced JSON object")
	}
	return strings.TrimSpace(inner), nil
}

// oneLine makes text fit a one-line reason: control characters become
// spaces, runs of spaces collapse, and it is cut to max runes.
func oneLine(text string, max int) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToValidUTF8(text, "\uFFFD") {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 || r == ' ' {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return clip(b.String(), max)
}

// clip cuts s to at most max runes, marking the cut.
func clip(s string, max int) string {
	n := 0
	for i := range s {
		if n == max {
			return s[:i] + "…"
		}
		n++
	}
	return s
}
