package gate

import (
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// expandBraces brace-expands a word as bash does before anything else, so
// that {rm,-rf,/} is seen as three words and {r..r}m as rm. It returns the
// parts of each resulting word, or false when there would be more than
// maxBraceFields of them. The parsed word is not changed.
func expandBraces(w *syntax.Word) ([][]syntax.WordPart, bool) {
	cp := &syntax.Word{Parts: slices.Clone(w.Parts)}
	if !syntax.SplitBraces(cp) {
		return [][]syntax.WordPart{w.Parts}, true
	}
	return expandParts(cp.Parts)
}

func expandParts(parts []syntax.WordPart) ([][]syntax.WordPart, bool) {
	out := [][]syntax.WordPart{nil}
	for _, part := range parts {
		br, ok := part.(*syntax.BraceExp)
		if !ok {
			for i := range out {
				out[i] = append(out[i], part)
			}
			continue
		}
		alternatives, ok := braceAlternatives(br)
		if !ok || len(out)*len(alternatives) > maxBraceFields {
			return nil, false
		}
		var next [][]syntax.WordPart
		for _, prefix := range out {
			for _, alt := range alternatives {
				next = append(next, append(slices.Clone(prefix), alt...))
			}
		}
		out = next
	}
	return out, true
}

// braceAlternatives lists what one {…} expands to.
func braceAlternatives(br *syntax.BraceExp) ([][]syntax.WordPart, bool) {
	if br.Sequence {
		return sequence(br)
	}
	var out [][]syntax.WordPart
	for _, elem := range br.Elems {
		expanded, ok := expandParts(elem.Parts)
		if !ok || len(out)+len(expanded) > maxBraceFields {
			return nil, false
		}
		out = append(out, expanded...)
	}
	return out, true
}

// sequence expands {x..y[..step]} of numbers or single letters.
func sequence(br *syntax.BraceExp) ([][]syntax.WordPart, bool) {
	from, to := br.Elems[0].Lit(), br.Elems[1].Lit()
	step := int64(1)
	if len(br.Elems) == 3 {
		s, err := strconv.ParseInt(br.Elems[2].Lit(), 10, 64)
		if err != nil {
			return nil, false
		}
		if s < 0 {
			s = -s
		}
		if s > 0 {
			step = s
		}
	}
	var values []string
	if len(from) == 1 && len(to) == 1 && isLetter(from[0]) && isLetter(to[0]) {
		a, b := int64(from[0]), int64(to[0])
		for _, v := range countFrom(a, b, step) {
			values = append(values, string(rune(v)))
		}
	} else {
		a, err1 := strconv.ParseInt(from, 10, 64)
		b, err2 := strconv.ParseInt(to, 10, 64)
		if err1 != nil || err2 != nil {
			return nil, false
		}
		width := 0
		if padded(from) || padded(to) {
			width = max(len(from), len(to))
		}
		for _, v := range countFrom(a, b, step) {
			s := strconv.FormatInt(v, 10)
			if len(s) < width {
				neg := strings.HasPrefix(s, "-")
				s = strings.TrimPrefix(s, "-")
				s = strings.Repeat("0", width-len(s)-btoi(neg)) + s
				if neg {
					s = "-" + s
				}
			}
			values = append(values, s)
		}
	}
	if values == nil {
		return nil, false
	}
	out := make([][]syntax.WordPart, len(values))
	for i, v := range values {
		out[i] = []syntax.WordPart{&syntax.Lit{Value: v}}
	}
	return out, true
}

// countFrom counts from a to b by step (up or down), or returns nil when
// that would be more than maxBraceFields values.
func countFrom(a, b, step int64) []int64 {
	var span uint64
	if a <= b {
		span = uint64(b) - uint64(a)
	} else {
		span = uint64(a) - uint64(b)
	}
	if span/uint64(step) >= maxBraceFields {
		return nil
	}
	var out []int64
	v := a
	for range span/uint64(step) + 1 {
		out = append(out, v)
		if a <= b {
			v += step
		} else {
			v -= step
		}
	}
	return out
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func padded(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return len(s) > 1 && s[0] == '0'
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
