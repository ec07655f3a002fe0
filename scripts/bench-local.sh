#!/usr/bin/env bash
# The local backend's cost against bubblewrap with equivalent confinement
# (its own user, mount, pid, net, ipc, uts and cgroup namespaces; the host's
# /usr and /etc and the workspace read-only; fresh /proc, /dev, /tmp and
# HOME; no capabilities; the sandbox identity), interleaved, N each
# (default 10); prints medians and ratios from one run. bwrap is given no
# seccomp filter and no Landlock ruleset (it has neither built in), so the
# comparison flatters it.
#   - cold run: `triage-sandbox run --backend local -- true`, a whole CLI
#     process with policy, gate, sandbox start, one command and removal;
#   - bwrap: one `bwrap ... true`.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10}
bin=$(pwd)/bin/triage-sandbox
command -v bwrap >/dev/null || { echo "bench-local: bwrap is not installed (apt-get install bubblewrap)" >&2; exit 2; }
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
chmod 755 "$ws"
printf '[sandbox]\nbackend = "local"\n' > "$ws/triage.toml"
as=(--unshare-all --die-with-parent --new-session --cap-drop ALL --uid 65534 --gid 65534
  --ro-bind /usr /usr --ro-bind /etc /etc --ro-bind "$ws" "$ws" --proc /proc --dev /dev
  --tmpfs /tmp --tmpfs /home/sandbox --chdir "$ws")
for d in bin sbin lib lib64 lib32 libx32; do
  if [ -L "/$d" ]; then as+=(--symlink "$(readlink "/$d")" "/$d"); elif [ -d "/$d" ]; then as+=(--ro-bind "/$d" "/$d"); fi
done
ms() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1 || true; e=$(date +%s%N); awk -v d=$((e - s)) 'BEGIN {printf "%.1f", d / 1e6}'; }
(cd "$ws" && "$bin" run -- true >/dev/null 2>&1) || { echo "bench-local: the local backend cannot run here:" >&2; (cd "$ws" && "$bin" run -- true) >&2 || true; exit 2; }
ours=(); theirs=()
for _ in $(seq 1 "$n"); do
  ours+=("$(cd "$ws" && ms "$bin" run -- true)")
  theirs+=("$(ms bwrap "${as[@]}" true)")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
o=$(median "${ours[@]}"); t=$(median "${theirs[@]}")
echo "local backend, median of $n: triage-sandbox run -- true ${o} ms; bwrap (equivalent namespaces and mounts) ${t} ms; ratio $(awk -v a="$o" -v b="$t" 'BEGIN {printf "%.1f", a/b}')"
