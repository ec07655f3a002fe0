package calc

import "testing"

func TestSum(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{{"1,2,3", 6}, {" 4 , 5", 9}} {
		got, err := Sum(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Sum(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	if _, err := Sum("1,x"); err == nil {
		t.Error("Sum(\"1,x\") did not fail")
	}
}
