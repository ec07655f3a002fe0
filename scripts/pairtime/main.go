// Command pairtime times two whole commands in turn (A B A B ...) and
// prints the median of the pairs' wall-time ratios A/B, with each side's
// median: pairing keeps a ratio meaningful while a noisy machine's speed
// drifts. The benchmark scripts use it; it judges nothing (no threshold).
//
//	pairtime [-n PAIRS] [-warmup RUNS] [-pause DURATION] [-name NAME] -- A... @@ B...
//
// A command that exits non-zero is no figure: pairtime stops with its
// output's tail and exit status 1.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"time"
)

func main() {
	n := flag.Int("n", 20, "pairs timed")
	warmup := flag.Int("warmup", 3, "untimed pairs first")
	pause := flag.Duration("pause", 0, "untimed wait after each pair (e.g. for a pool to refill)")
	name := flag.String("name", "A vs B", "what the line printed is about")
	flag.Parse()
	a, b, err := split(flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "pairtime:", err)
		os.Exit(2)
	}
	line, err := measure(context.Background(), a, b, *n, *warmup, *pause)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pairtime: %s: %v\n", *name, err)
		os.Exit(1)
	}
	fmt.Printf("%s: %s\n", *name, line)
}

// split parses "A... @@ B..." (@@, since a command may hold --).
func split(args []string) (a, b []string, err error) {
	i := slices.Index(args, "@@")
	if i <= 0 || i == len(args)-1 {
		return nil, nil, errors.New("want: -- COMMAND_A... @@ COMMAND_B...")
	}
	return args[:i], args[i+1:], nil
}

func measure(ctx context.Context, a, b []string, n, warmup int, pause time.Duration) (string, error) {
	var ta, tb, ratio []float64
	for i := -warmup; i < n; i++ {
		da, err := timeOne(ctx, a)
		if err != nil {
			return "", err
		}
		db, err := timeOne(ctx, b)
		if err != nil {
			return "", err
		}
		if i >= 0 {
			ta, tb = append(ta, ms(da)), append(tb, ms(db))
			ratio = append(ratio, float64(da)/float64(db))
		}
		time.Sleep(pause)
	}
	return fmt.Sprintf("%.3f× (median of %d paired ratios; medians A %.2f ms, B %.2f ms; min–max A %.2f–%.2f, B %.2f–%.2f)",
		median(ratio), n, median(ta), median(tb), slices.Min(ta), slices.Max(ta), slices.Min(tb), slices.Max(tb)), nil
}

// timeOne is one whole process's wall time: from its start to its reaping.
func timeOne(ctx context.Context, argv []string) (time.Duration, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		tail := out.Bytes()
		if len(tail) > 400 {
			tail = tail[len(tail)-400:]
		}
		return 0, fmt.Errorf("%q: %w: %s", argv, err, tail)
	}
	return d, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
