package output

import (
	"encoding/binary"
	"strings"
	"unsafe"
)

// needleFilter answers "could any needle occur in this block?" without
// visiting every byte: a Wu-Manber shift table over 4-byte blocks of the
// needles' first 8 bytes (every needle is at least MinSecretLen = 8 long)
// skips up to 5 bytes at a time, and a set of hashed 8-byte prefixes
// confirms a candidate. Blocks with no candidate skip the replacer.
type needleFilter struct {
	shift    [1 << 14]uint8  // by hashed 4-byte block: how far the window may move
	prefixes [1 << 10]uint64 // 65536-bit set of hashed 8-byte prefixes
	used     bool
}

const (
	filterMul  = 0x9E3779B97F4A7C15
	windowLen  = 8 // MinSecretLen
	blockLen   = 4
	maxShift   = windowLen - blockLen + 1
	shiftBits  = 12
	prefixBits = 16
	blockMul32 = 0x9E3779B1
)

func prefixHash(v uint64) uint32 { return uint32((v * filterMul) >> (64 - prefixBits)) }
func blockHash(v uint32) uint32  { return (v * blockMul32) >> (32 - shiftBits) }

func (f *needleFilter) add(needle string) {
	if !f.used {
		for i := range f.shift {
			f.shift[i] = maxShift
		}
		f.used = true
	}
	b := []byte(needle[:windowLen])
	h := prefixHash(binary.LittleEndian.Uint64(b))
	f.prefixes[h>>6] |= 1 << (h & 63)
	// The block ending at offset e (e = 3..7) may move the window by 7-e.
	for start := 0; start+blockLen <= windowLen; start++ {
		bh := blockHash(binary.LittleEndian.Uint32(b[start:]))
		if s := uint8(windowLen - blockLen - start); s < f.shift[bh] {
			f.shift[bh] = s
		}
	}
}

// mayContain reports whether s could hold one of the needles.
func (f *needleFilter) mayContain(s string) bool {
	if !f.used || len(s) < windowLen {
		return false
	}
	// Read the string's bytes in place; they are never written.
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	for end := windowLen; end <= len(b); {
		sh := f.shift[blockHash(binary.LittleEndian.Uint32(b[end-blockLen:]))]
		if sh > 0 {
			end += int(sh)
			continue
		}
		h := prefixHash(binary.LittleEndian.Uint64(b[end-windowLen:]))
		if f.prefixes[h>>6]&(1<<(h&63)) != 0 {
			return true
		}
		end++
	}
	return false
}

// tokenChar marks the characters secrets are written with.
var tokenChar = func() (t [256]bool) {
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = true
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for _, c := range "_-.+/=" {
		t[c] = true
	}
	return t
}()

// minTokenRun is the shortest run of token characters a pattern rule can
// match (a Slack token; the others are longer).
const minTokenRun = 14

// linesWithTokens returns the [start, end) byte ranges of the lines that
// hold a run of at least minTokenRun token characters: only those can match
// a pattern rule. It looks at the last byte a run would need first, so in
// ordinary text it skips most bytes.
func linesWithTokens(s string) [][2]int {
	var out [][2]int
	for i := minTokenRun - 1; i < len(s); {
		if !tokenChar[s[i]] {
			i += minTokenRun
			continue
		}
		j := i
		for j > i-minTokenRun+1 && tokenChar[s[j-1]] {
			j--
		}
		if j > i-minTokenRun+1 {
			i = j + minTokenRun - 1 // the run starting at j is the next candidate
			continue
		}
		start := strings.LastIndexByte(s[:i], '\n') + 1
		end := strings.IndexByte(s[i:], '\n')
		if end < 0 {
			end = len(s)
		} else {
			end += i + 1
		}
		out = append(out, [2]int{start, end})
		i = end + minTokenRun - 1
	}
	return out
}
