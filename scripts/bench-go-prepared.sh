#!/usr/bin/env bash
# A reproducer's `go test ./...` of a Go module with a third-party
# dependency, with the prepared caches (`triage-sandbox prepare`), against
# the same command on the host with a warm cache; interleaved, N each
# (default 10), medians and the ratio (the target is at most 2x).
#
#   scripts/bench-go-prepared.sh [N] [BACKEND] [POOL]
#
# POOL > 0 gives reproducers a pool of that many started sandboxes
# ([sandbox.reproducer] pool): the sandbox's start is then off the run's
# path, and what is left is the command's own time in the sandbox.
#
# The module is the godeps fixture (cmd/triage-sandbox/testdata/realprojects):
# its dependency is published to a module proxy in a directory, so nothing
# is fetched from the network. Needs go, python3 and a backend that runs
# here (docker by default); builds bin/ first if it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10}
backend=${2:-docker}
pool=${3:-0}
repo=$(pwd)
bin=$repo/bin/triage-sandbox
[ -x "$bin" ] || { CGO_ENABLED=0 go build -buildvcs=auto -o bin/triage-sandbox ./cmd/triage-sandbox-front &&
  CGO_ENABLED=0 go build -buildvcs=auto -o bin/triage-sandbox-cli ./cmd/triage-sandbox &&
  CGO_ENABLED=0 go build -buildvcs=auto -o bin/triage-sandbox-inside ./cmd/triage-sandbox-inside; }
dir=$(mktemp -d)
cleanup() {
  [ "$pool" = 0 ] || (cd "$dir/ws" && XDG_STATE_HOME=$dir/state "$bin" session end pool:reproducer >/dev/null 2>&1) || true
  GOMODCACHE=$dir/modcache go clean -modcache 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
chmod 755 "$dir"
ws=$dir/ws co=$dir/widgets
mkdir -p "$ws" "$co" "$dir/state"
printf '[project]\ncheckout = "../widgets"\n' > "$ws/triage.toml"
[ "$pool" = 0 ] || printf '[sandbox.reproducer]\npool = %d\n' "$pool" >> "$ws/triage.toml"
cp -a cmd/triage-sandbox/testdata/realprojects/godeps/. "$co/"

# The dependency, published to a directory proxy as the go command expects
# (a module zip whose entries are under path@version/).
src=cmd/triage-sandbox/testdata/goproxy/example.com/greet@v1.0.0
proxy=$dir/proxy/example.com/greet/@v
mkdir -p "$proxy"
python3 - "$src" "$proxy/v1.0.0.zip" <<'EOF'
import os, sys, zipfile
src, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(out, "w") as z:
    for name in sorted(os.listdir(src)):
        z.write(os.path.join(src, name), "example.com/greet@v1.0.0/" + name)
EOF
cp "$src/go.mod" "$proxy/v1.0.0.mod"
echo '{"Version":"v1.0.0","Time":"2024-01-01T00:00:00Z"}' > "$proxy/v1.0.0.info"
echo v1.0.0 > "$proxy/list"
export GOMODCACHE=$dir/modcache XDG_STATE_HOME=$dir/state
(cd "$co" && GOPROXY=file://$dir/proxy GOSUMDB=off GOFLAGS=-mod=mod go mod download)
if [ "$(id -u)" = 0 ]; then chown -R 1000:1000 "$ws" "$co"; fi

sandboxed=("$bin" run --config "$ws/triage.toml" --role reproducer --backend "$backend" --workdir "$co" -- go test ./...)
hostrun() { (cd "$co" && GOCACHE=$dir/host-gocache GOPROXY=off GOFLAGS= go test ./...); }
ms() {
  local s e out
  s=$(date +%s%N)
  if ! out=$("$@" 2>&1); then echo "bench-go-prepared: failed: $*" >&2; echo "$out" | tail -5 >&2; exit 1; fi
  e=$(date +%s%N)
  echo $(( (e - s) / 1000000 ))
}
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "prepare (a cold build, minutes on a small machine):" >&2
"$bin" prepare --config "$ws/triage.toml" --backend "$backend" >&2
hostrun >/dev/null # the host's warm cache
"${sandboxed[@]}" >/dev/null 2>&1 || true # the first sandboxed run (the image, the kernel's caches)
s=(); h=()
for _ in $(seq 1 "$n"); do
  s+=("$(ms "${sandboxed[@]}")")
  h+=("$(ms hostrun)")
  [ "$pool" = 0 ] || sleep 2 # the pool refills off the measured path
done
ms_s=$(median "${s[@]}") ms_h=$(median "${h[@]}")
printf 'go test ./... (godeps, %d runs each, medians): reproducer on %s (pool %d) with the prepared cache %d ms, host with a warm cache %d ms: %.2fx\n' \
  "$n" "$backend" "$pool" "$ms_s" "$ms_h" "$(awk -v a="$ms_s" -v b="$ms_h" 'BEGIN {print a/b}')"
