#!/usr/bin/env bash
# Cold-run latency: `triage-sandbox run -- true` against `docker run --rm`
# with similar hardening, interleaved, N each (default 10); prints medians
# and their ratio. Read the ratio from one run on one machine.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10}
bin=$(pwd)/bin/triage-sandbox
ws=$(mktemp -d)
trap 'rm -rf "$ws"' EXIT
image=${TRIAGE_SANDBOX_IMAGE:-triage-sandbox:latest}
ms() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1 || true; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
ours=(); theirs=()
for _ in $(seq 1 "$n"); do
  ours+=("$(cd "$ws" && ms "$bin" run -- true)")
  theirs+=("$(ms docker run --rm --network none --cap-drop ALL --security-opt no-new-privileges \
    --read-only --init --pids-limit 512 --memory 1g --memory-swap 1g --user 65534:65534 \
    --tmpfs /tmp --tmpfs /home/sandbox "$image" true)")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
o=$(median "${ours[@]}"); t=$(median "${theirs[@]}")
echo "cold run, median of $n: triage-sandbox run ${o} ms, docker run --rm ${t} ms, ratio $(awk -v a="$o" -v b="$t" 'BEGIN {printf "%.2f", a/b}')"
