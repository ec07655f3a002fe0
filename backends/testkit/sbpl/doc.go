// Package sbpl is an evaluator for the subset of Apple's Sandbox Profile
// Language (SBPL) that the seatbelt backend emits. It exists so that the
// rendered profiles can be proven on machines without macOS: tests compile
// a profile with its -D parameters and ask, for one operation on one path,
// address or service name, whether the profile allows it.
//
// What it models, and where each rule comes from (see
// shared/research/seatbelt.md, section 2.6):
//
//   - Both string syntaxes: "..." with \\ and \" escapes, and #"..." raw
//     regex literals. A literal longer than 1024 bytes is an error, as in
//     sandbox-exec ("Error reading string").
//   - Expressions in argument position: (param "K"), (string-append ...),
//     (regex-quote ...). A missing parameter is an error.
//   - Several filters in one rule are alternatives (OR); (require-all ...),
//     (require-any ...) and (require-not ...) combine them.
//   - Precedence, per concrete operation: a rule with filters beats a rule
//     without (an unfiltered rule never overrides a filtered one, in either
//     order), and among the rules of the same kind the last match wins.
//     With SpecificOpWins (the default) a rule naming the operation itself
//     also beats one that only matches it through a wildcard (file-write*),
//     whatever their order: sandbox-runtime reports that behaviour and the
//     kernel has not been measured here. Options.LastMatchOnly turns that
//     rule off, and Options.DenyWins is a third reading others report (a
//     matching deny always wins): callers should prove their profiles under
//     all three.
//   - (deny|allow default) is the fallback when nothing else matches.
//   - Network hosts are only "*" or "localhost"; a literal IP is a syntax
//     error, as in sandbox-exec. "localhost" matches 127.0.0.0/8, ::1, the
//     unspecified address and every address of the host (Options.HostAddrs),
//     but not the IPv4-mapped form (::ffff:127.0.0.1). A (local ip ...)
//     filter on network-outbound is judged against the unbound source
//     address, which "localhost" matches: such a rule admits every
//     destination (the egress bug sandbox-runtime and Nix shipped).
//
// It is deliberately strict: an operation, filter or form it does not know
// is an error, so a profile cannot pass its tests by using something the
// evaluator silently ignores.
package sbpl
