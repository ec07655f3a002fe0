//go:build linux

// Command machinecost prints what this machine charges for the few
// things every start of ours is made of: a page fault on fresh memory, a
// fork of a process with a resident heap, an exec of a small C program,
// and an exec of an empty static Go program. The benchmark scripts print
// ratios measured in one run; these absolute costs are the yardstick for
// reading them across machines (a host whose page faults cost ten times
// more makes every figure that is mostly process starts look worse
// against an anchor that is mostly daemon work, as `docker exec` is). It
// judges nothing (no threshold).
//
//	machinecost [-n RUNS] [-go EMPTY_GO_BINARY]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	n := flag.Int("n", 200, "runs of each start timed (the median is printed)")
	emptyGo := flag.String("go", "", "an empty static Go program to time (omitted when empty)")
	flag.Parse()
	if *n < 1 {
		fmt.Fprintln(os.Stderr, "machinecost: -n: want a positive number of runs")
		os.Exit(2)
	}
	line, err := measure(*n, *emptyGo)
	if err != nil {
		fmt.Fprintln(os.Stderr, "machinecost:", err)
		os.Exit(1)
	}
	fmt.Println("machine costs:", line)
}

func measure(n int, emptyGo string) (string, error) {
	fault, err := pageFault(16384)
	if err != nil {
		return "", fmt.Errorf("page faults: %w", err)
	}
	fork, err := forkWithHeap(n/4+1, 64<<20)
	if err != nil {
		return "", fmt.Errorf("fork: %w", err)
	}
	line := fmt.Sprintf("a page fault on fresh memory %.2f µs; fork, exit and wait of a process with 64 MiB resident %s", micros(fault), millis(fork))
	for _, p := range []struct{ what, path string }{{"exec of /bin/true", "/bin/true"}, {"exec of an empty static Go program", emptyGo}} {
		if p.path == "" {
			continue
		}
		d, err := start(n, p.path)
		if err != nil {
			return "", fmt.Errorf("%s: %w", p.what, err)
		}
		line += fmt.Sprintf("; %s %s", p.what, millis(d))
	}
	return line, nil
}

// pageFault maps pages of fresh anonymous memory and writes one byte to
// each: every write is a fault that allocates and zeroes a page.
func pageFault(pages int) (time.Duration, error) {
	mem, err := smallPages(pages * unix.Getpagesize())
	if err != nil {
		return 0, err
	}
	defer unix.Munmap(mem)
	began := time.Now()
	touch(mem)
	return time.Since(began) / time.Duration(pages), nil
}

// smallPages maps size bytes of fresh anonymous memory in small pages only:
// a huge page would take 512 pages in one fault.
func smallPages(size int) ([]byte, error) {
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("mmap: %w", err)
	}
	if err := unix.Madvise(mem, unix.MADV_NOHUGEPAGE); err != nil {
		_ = unix.Munmap(mem)
		return nil, fmt.Errorf("madvise: %w", err)
	}
	return mem, nil
}

// touch writes one byte to each page of mem, making every page resident.
func touch(mem []byte) {
	for i := 0; i < len(mem); i += unix.Getpagesize() {
		mem[i] = 1
	}
}

// forkWithHeap times fork, exit and wait with heap bytes resident: the
// page tables a fork copies are what it costs (the child only exits).
func forkWithHeap(runs, heap int) (time.Duration, error) {
	mem, err := smallPages(heap)
	if err != nil {
		return 0, err
	}
	defer unix.Munmap(mem)
	touch(mem)
	times := make([]time.Duration, 0, runs)
	for range runs {
		began := time.Now()
		pid, err := forkExit()
		if err != nil {
			return 0, err
		}
		var ws unix.WaitStatus
		if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil {
			return 0, fmt.Errorf("wait: %w", err)
		}
		times = append(times, time.Since(began))
	}
	return median(times), nil
}

// start times an exec of path and its exit, whole, as a shell would run it.
func start(runs int, path string) (time.Duration, error) {
	times := make([]time.Duration, 0, runs)
	for range runs + 3 {
		began := time.Now()
		if out, err := exec.Command(path).CombinedOutput(); err != nil {
			return 0, fmt.Errorf("%v: %s", err, out)
		}
		times = append(times, time.Since(began))
	}
	return median(times[3:]), nil
}

func median(d []time.Duration) time.Duration {
	slices.Sort(d)
	return d[len(d)/2]
}

func micros(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func millis(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Nanoseconds())/1e6) }
