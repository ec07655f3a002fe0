package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/triage-sandbox/triage-sandbox/exitcode"
	"github.com/triage-sandbox/triage-sandbox/warm/fastpath"
)

// FastEnv set to 0 turns the fast path off: every run is the CLI's.
const FastEnv = "TRIAGE_SANDBOX_FAST"

// tryFast runs `run --session NAME ...` through the session's keeper, or
// a `run` without a session through the pool's keeper its route names
// (package warm/fastpath), and exits with its code. It returns only when
// nothing ran: the caller then hands the command to the CLI, which does
// what it always does. After the request went out the command may have
// run, so an error then is reported (exit 125), never retried.
func tryFast(args []string) {
	flags, ok := fastpath.ParseRun(args)
	if !ok || os.Getenv(FastEnv) == "0" {
		return
	}
	// One P: the front only waits and relays. With more, each goroutine
	// it starts (the signal loop, the cancel's watch, the poller's wakes)
	// wakes an idle P, so a thread is made or spins looking for work:
	// measured, a third of the front's CPU (2.0 ms → 1.6 ms a run, on a
	// 2-core host shared with the keeper and the sandbox it waits for).
	runtime.GOMAXPROCS(1)
	cwd, err := os.Getwd()
	if err != nil {
		return
	}
	dir := fastpath.DefaultDir()
	if !private(dir) {
		return
	}
	socket, err := fastpath.ReadRoute(dir, cwd, flags)
	if err != nil {
		return
	}
	cli, err := findCLI()
	if err != nil {
		return // the hand-over says why
	}
	id, err := fastpath.FileID(cli)
	if err != nil {
		return
	}
	req := fastpath.Request{Args: args, Cwd: cwd, Env: os.Environ(), CLI: id}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	cancel := make(chan struct{})
	go func() { <-sigs; close(cancel) }()
	code, err := fastpath.Run(context.Background(), socket, req, cancel, os.Stdout, os.Stderr)
	if errors.Is(err, fastpath.ErrFallback) {
		signal.Reset(os.Interrupt, syscall.SIGTERM)
		select {
		case <-cancel:
			os.Exit(130) // interrupted before anything ran
		default:
		}
		return
	}
	if err != nil {
		_, _ = os.Stderr.WriteString("triage-sandbox: " + err.Error() + "\n")
		os.Exit(exitcode.Refused)
	}
	os.Exit(code)
}

// private: dir is a directory of this user's that no one else can enter
// (as the keepers keep it): a route or socket elsewhere is not trusted.
func private(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
