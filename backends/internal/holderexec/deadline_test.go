package holderexec

import (
	"testing"
	"time"
)

func TestDeadlinePassedWithoutReading(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		wait    time.Duration
		passed  bool
	}{
		{"none never passes", 0, 5 * time.Millisecond, false},
		{"not yet", time.Hour, 0, false},
		{"passed though C was not read", time.Millisecond, 10 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := StartDeadline(tc.timeout)
			defer d.Stop()
			time.Sleep(tc.wait)
			if got := d.Passed(); got != tc.passed {
				t.Fatalf("Passed() = %v, want %v", got, tc.passed)
			}
			if (d.C == nil) != (tc.timeout == 0) {
				t.Fatalf("C is nil: %v, with timeout %v", d.C == nil, tc.timeout)
			}
		})
	}
}
