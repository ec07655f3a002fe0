// Package seatbelt is the macOS backend: it renders a policy.Policy as an
// SBPL profile for sandbox-exec and, on macOS, runs each command under it.
// Rendering is pure Go and works on every OS (`triage-sandbox render
// --backend seatbelt` prints the profile and its parameters on Linux too);
// the package sbpl beside it evaluates what is rendered, so the profiles are
// proven without a Mac, and the darwin tests run them under the real
// sandbox-exec.
//
// # The profile
//
// (version 1), (deny default) tagged with the run id, then typed rules in
// fixed phases: the embedded base (base.sbpl), reads, writes, network,
// services, and last every deny, so that no allow can come after a
// credential deny. Every host path is a -D parameter, never text in the
// profile, and is canonical first (/tmp -> /private/tmp, /var ->
// /private/var, symlinks resolved through the nearest existing ancestor);
// "..", control characters, NUL and invalid UTF-8 are refused. The profile
// is written to a fresh 0600 file and passed with -f to the pinned
// /usr/bin/sandbox-exec.
//
// Reads are the policy's allow-list (its host roots and mounts: system
// directories, the workspace, the checkout, the interpreter's environment),
// plus the platform files every program needs (dyld's cache, time zones,
// /bin/sh's shell selection, the developer tools /usr/bin/git hands over
// to) and stat-only access to the directories above them. The caller's
// home is not readable unless the workspace is in it. The credential paths,
// keychains, browser profiles, shell histories, triage-sandbox's own state,
// the container-runtime sockets and every path masked under a readable
// mount are denied for read, write, link and exec, under both spellings,
// and no directory above them may be renamed or created (the move bypass).
// Hard links are allowed nowhere: Seatbelt matches paths, not inodes.
//
// Writes are the policy's writable paths, this run's HOME and TMPDIR (a
// directory per sandbox, removed at Close), /dev/null and the ptys made
// inside. The caller's terminal (/dev/tty, its /dev/ttys*) is not
// reachable: TIOCSTI on it would type into the operator's shell.
//
// # Network
//
// network = false renders loopback only: outbound to "localhost" and
// listening on "localhost". Seatbelt's "localhost" means every address of
// this host, so the host's own services would be reachable; the runner
// therefore lists the TCP and UDP ports this host listens on before each
// command (netstat -an) and denies connecting to each of them, and to port
// 53 always. A reproducer's own server and a browser it starts work: the
// server binds 127.0.0.1 on a port of its choosing (not 0.0.0.0 or :: —
// dual-stack and wildcard binds are refused, which keeps it off the
// network; bind the IPv4 loopback explicitly, e.g. python -m http.server
// --bind 127.0.0.1), and the browser connects to it. What stays reachable:
// a host service started after the command started, and, since "localhost"
// covers every host address, a server the sandbox binds on a LAN address is
// reachable from the LAN. There is no DNS (the mDNSResponder socket is
// denied): use 127.0.0.1, not a name. Headless Chromium needs --no-sandbox
// (a sandboxed process cannot apply a sandbox of its own); the reproducer
// role allows its org.chromium.* services and the font server.
//
// network = true (accepted as weaker: outbound_nat) allows any destination
// and DNS; the host's listeners stay denied.
//
// A network allow-list (egress_proxy; own_loopback accepted as weaker)
// renders outbound to one port of this host alone: the run's egress proxy
// (package egress), which package sandbox starts before the sandbox with
// egress.Serve on a free port of 127.0.0.1 and names on the run's copy of
// the policy (Network.HostProxy). There is no namespace to bind its socket
// into, and the command's tools need a TCP proxy address. Chosen over
// network = false's localhost:* because the allow-list is there to bound
// what leaves: with every port of this host open, a host service started
// after the command (or another run's proxy) would be a way out beside
// the list. The cost: a reproducer cannot connect to a server of its own
// on loopback (it may still listen); use network = false for that. The
// host's listeners stay denied (the proxy's port left out), and DNS
// (mDNSResponder, port 53). Seatbelt cannot name 127.0.0.1 alone:
// "localhost" is every address of this host, so the proxy's port number
// on ::1 or a LAN address is allowed too. The proxy listens on 127.0.0.1
// only; what remains is a host service bound to that same number on
// another address, which the kernel's choice of a free port makes rare
// (and the listener list, by port, cannot tell apart). Any local
// process can reach the proxy's port, so it asks every request for a
// secret of this run (egress.Config.Secret, Proxy-Authorization, user
// ts): the command's proxy variables are http://ts:SECRET@127.0.0.1:PORT
// (policy.Policy.EnvList), the profile never holds it, and the policy's
// JSON and hash do not either. `render` shows port 3128 (RenderProxyPort)
// in place of a run's; a start without the run's proxy is refused.
//
// What Seatbelt cannot express is refused with the reason instead of being
// widened: an egress rule to a literal IP or a host name (remote hosts are
// only * or localhost), inbound limited to loopback peers, an outbound rule
// on the local address (it admits every destination).
//
// # Services
//
// Mach lookups are a minimal allowlist: opendirectoryd (users and groups),
// dirhelper, cfprefsd (preferences, read only), PowerManagement. The doors
// out are denied by name too, last: SecurityServer and securityd
// (keychain), trustd (TLS verification fetches OCSP/CRLs outside),
// launchservicesd and lsd (`open` starts applications outside), Apple
// events, the pasteboard, the window server, Docker. Library users may open
// keychain, trustd, launchservices, appleevents or pasteboard with
// Options.OptIns; each is shown in the profile with what it costs (Go
// programs verifying TLS with the network on need trustd).
//
// # Capabilities
//
// See capabilities: host_root, mask_under_mount and egress_proxy. Seatbelt shares
// the host's loopback and process table, cannot switch uid, limit memory,
// processes or CPU, or bound the writable paths, so a config must accept
// those weaker modes ([sandbox] accept_weaker) before a policy is built for
// it, and the selftest reports the checks that need them as not applicable.
//
// # Running
//
// Start (macOS only) makes the per-run directory (0700, under the caller's
// temp directory) with an ownership record (pid and start time) that Sweep
// judges. Each Exec renders afresh (the host's listeners change), writes
// the profile and takes the shared command flow (package holderexec: start
// gate, timeout, cancellation) with this binary's exec helper, the shared
// supervisor (package supervise), started on the host: its own process
// group, the timeout with SIGTERM then SIGKILL to the whole group, and
// stdin as the lifeline that ends the command if triage-sandbox dies. The
// helper runs sandbox-exec, which applies the profile and execs the
// command. Close ends a running command, then removes the directory. The
// runner itself is plain Unix (runner.go): its tests on Linux drive it with
// a stand-in for sandbox-exec. Denials carry the message tsbx:RUNID:
// `log show --predicate 'eventMessage CONTAINS "tsbx:RUNID"'` lists them.
package seatbelt
