package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sizeUnits maps a lower-cased suffix to its multiplier. Every unit is a power
// of 1024 whether written "m", "mb" or "mib", as docker and most users mean it.
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
}

// ParseSize parses a byte size such as "512m", "2g", "1.5g", "64KiB" or
// "1048576". Suffixes are case-insensitive powers of 1024; the result must be
// greater than zero.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	end := 0
	for end < len(t) && (t[end] >= '0' && t[end] <= '9' || t[end] == '.') {
		end++
	}
	num, unit := t[:end], strings.ToLower(strings.TrimSpace(t[end:]))
	mult, ok := sizeUnits[unit]
	if num == "" || !ok {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	var n int64
	if strings.Contains(num, ".") {
		f, err := strconv.ParseFloat(num, 64)
		if err != nil {
			return 0, fmt.Errorf("invalid size %q", s)
		}
		f *= float64(mult)
		if f >= math.MaxInt64 {
			return 0, fmt.Errorf("size %q is too large", s)
		}
		n = int64(f) // fractions of a byte are dropped
	} else {
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			if errors.Is(err, strconv.ErrRange) {
				return 0, fmt.Errorf("size %q is too large", s)
			}
			return 0, fmt.Errorf("invalid size %q", s)
		}
		if v > math.MaxInt64/mult {
			return 0, fmt.Errorf("size %q is too large", s)
		}
		n = v * mult
	}
	if n <= 0 {
		return 0, fmt.Errorf("size %q must be greater than zero", s)
	}
	return n, nil
}
