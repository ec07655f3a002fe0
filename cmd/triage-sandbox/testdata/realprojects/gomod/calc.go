// Package calc is a small Go module for the real-project tests.
package calc

import (
	"fmt"
	"strconv"
	"strings"
)

// Sum adds the comma-separated integers in s.
func Sum(s string) (int, error) {
	total := 0
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return 0, fmt.Errorf("calc: %q: %w", f, err)
		}
		total += n
	}
	return total, nil
}
