//go:build !linux

package probe

import "io"

// allocResident touches a byte per page where MAP_POPULATE is missing.
func allocResident(n int64, _ io.Writer) int {
	const chunk = 64 << 20
	var keep [][]byte
	for done := int64(0); done < n; done += chunk {
		b := make([]byte, min(chunk, n-done))
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep = append(keep, b)
	}
	_ = len(keep)
	return 0
}
