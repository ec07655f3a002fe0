package probe

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/triage-sandbox/triage-sandbox/protocol"
)

// floodHostile is what flood prints before and after its filler.
func floodHostile(secret string) string {
	return "\x1b]52;c;ZXZpbA==\x07\x1b[6n title\n::add-mask::" + secret + "\n  ::stop-commands::tok\nkey " + secret + "\n" +
		// Forms the runner parses that a plain prefix check misses: .NET
		// whitespace before "::", and the legacy "##[" anywhere in a line.
		"\u00a0::warning::nbsp\n\u3000::error::ideographic\n\u2003::notice::em\ntext before ##[error]legacy\n"
}

func flood(w io.Writer, n int64, secret string) int {
	bw := bufio.NewWriterSize(w, 64<<10)
	hostile := floodHostile(secret)
	_, _ = bw.WriteString(hostile)
	line := strings.Repeat("x", 99) + "\n"
	for written := int64(0); written < n; written += int64(len(line)) {
		if _, err := bw.WriteString(line); err != nil {
			return 1
		}
	}
	_, _ = bw.WriteString(hostile)
	// Last, one run of token characters longer than any shown tail: a cut
	// that lands inside it must not show the end of a token.
	_, _ = bw.WriteString(strings.Repeat(FloodTailToken(secret), FloodTailRepeat) + "\n")
	if err := bw.Flush(); err != nil {
		return 1
	}
	return 0
}

// FloodTailToken is the token the flood's last line repeats (a length that
// no power-of-two cut aligns with), and FloodTailRepeat how often.
func FloodTailToken(secret string) string {
	return "tailtok" + strings.TrimPrefix(secret, "flood-") + "x"
}

// FloodTailRepeat makes the run longer than any tail shown by default.
const FloodTailRepeat = 4000

// ChildSubcommand is the entry point of the probe's helpers.
const ChildSubcommand = string(protocol.EntryProbeChild)

// Argv is the argv that runs plan with the binary at self; tag only sits
// in argv, so the host can find the process.
func Argv(self, tag string, plan Plan) ([]string, error) {
	return protocol.Argv(self, protocol.EntryProbe, protocol.Probe{Tag: tag, Plan: plan})
}

// Child runs a helper: "true"; "sleep TOKEN SECONDS" (the token sits in
// argv so the host can find a survivor); "survivors TOKEN" (those seen from
// inside); "alloc BYTES" (allocate and touch).
func Child(args []string, errOut io.Writer) int {
	if len(args) == 0 {
		return 2
	}
	switch args[0] {
	case "true":
		return 0
	case "sleep":
		secs := 30
		if len(args) > 2 {
			secs, _ = strconv.Atoi(args[2])
		}
		time.Sleep(time.Duration(secs) * time.Second)
		return 0
	case "flood":
		// flood N SECRET: hostile output: escape sequences, workflow
		// commands and a secret at both ends, N bytes of filler between.
		if len(args) < 3 {
			return 2
		}
		n, err := strconv.ParseInt(args[1], 10, 64)
		if err != nil || n <= 0 {
			return 2
		}
		return flood(os.Stdout, n, args[2])
	case "survivors":
		// survivors TOKEN: the pids of live "sleep TOKEN" helpers in this
		// sandbox, one a line, seen from inside: a user-space kernel
		// (gVisor) hides the sandbox's processes from the host's scan.
		if len(args) < 2 {
			return 2
		}
		pids, err := SleepersWithToken("/proc", args[1])
		if err != nil {
			fmt.Fprintln(errOut, "survivors:", err)
			return 1
		}
		for _, pid := range pids {
			fmt.Println(pid)
		}
		return 0
	case "naive_holder":
		// A holder as the sandbox's was before issue 35: it takes the
		// signals a stop from outside sends and ends on them. The control
		// of PROC-04 signals it.
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
		fmt.Println("ready")
		<-sigs
		return 143
	case "alloc":
		if len(args) < 2 {
			return 2
		}
		n, err := strconv.ParseInt(args[1], 10, 64)
		if err != nil || n <= 0 {
			fmt.Fprintln(errOut, "alloc: bad size")
			return 2
		}
		return allocResident(n, errOut)
	}
	fmt.Fprintln(errOut, "unknown helper", args[0])
	return 2
}

// SleepersWithToken lists the live processes under procDir (a /proc) whose
// argv is exactly a "sleep TOKEN" helper's, so that neither the scan itself
// nor a supervisor whose spec quotes the token is taken for one.
func SleepersWithToken(procDir, token string) ([]int, error) {
	entries, err := os.ReadDir(procDir)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		dir := procDir + "/" + e.Name()
		b, err := os.ReadFile(dir + "/cmdline")
		if err != nil {
			continue
		}
		argv := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
		if len(argv) < 4 || argv[1] != ChildSubcommand || argv[2] != "sleep" || argv[3] != token {
			continue
		}
		// A zombie is dead already; its parent has not reaped it yet.
		if st, err := os.ReadFile(dir + "/stat"); err == nil {
			if i := strings.LastIndexByte(string(st), ')'); i > 0 && strings.HasPrefix(strings.TrimSpace(string(st)[i+1:]), "Z") {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids, nil
}
