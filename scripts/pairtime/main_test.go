package main

import (
	"context"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"a", "@@", "b"}, true},
		{[]string{"a", "--", "x", "@@", "b", "--", "y"}, true},
		{[]string{"@@", "b"}, false},
		{[]string{"a", "@@"}, false},
		{[]string{"a", "b"}, false},
	} {
		if _, _, err := split(c.args); (err == nil) != c.ok {
			t.Errorf("split(%q): %v", c.args, err)
		}
	}
}

// A failing command is no figure.
func TestMeasureRefusesAFailure(t *testing.T) {
	if _, err := measure(context.Background(), []string{"false"}, []string{"true"}, 2, 0, 0); err == nil {
		t.Fatal("a failing A gave a figure")
	}
	line, err := measure(context.Background(), []string{"true"}, []string{"true"}, 3, 1, 0)
	if err != nil || !strings.Contains(line, "median of 3 paired ratios") {
		t.Fatalf("%q, %v", line, err)
	}
}
