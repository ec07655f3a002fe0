#!/usr/bin/env bash
# Cold-run latency: `triage-sandbox run -- true` against `docker run --rm`
# with the same hardening (the sandbox's own seccomp profile, limits,
# ulimits, namespaces and tmpfs options, as `render` shows them; not its
# binds or its log driver, which are no hardening), interleaved, N each
# (default 10); prints medians and their ratio. Read the ratio from one run on one machine. Two
# workspaces: a bare directory (nothing writable, nothing staged) and an
# ai-triager workspace whose outputs are staged copies (50 reproducers, the
# agent role: five writable paths copied in and back).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10}
bin=$(pwd)/bin/triage-sandbox
ws=$(mktemp -d)
aw=$(mktemp -d)
sc=$(mktemp)
trap 'rm -rf "$ws" "$aw" "$sc"' EXIT
mkdir -p "$aw/repros" "$aw/issues" "$aw/.triage"
printf '[project]\n' > "$aw/triage.toml"
echo '# notes' > "$aw/NOTES.md"; echo '# index' > "$aw/INDEX.md"
for i in $(seq 1 50); do echo "print($i)" > "$aw/repros/$i.py"; done
image=${TRIAGE_SANDBOX_IMAGE:-triage-sandbox:latest}
# mktemp -d makes 0700 directories the sandbox's identity cannot enter:
# every run would time a refused command.
chmod 755 "$ws" "$aw"
# A run that fails is no figure: stop with its output.
ms() {
  local s e out
  s=$(date +%s%N)
  if ! out=$("$@" 2>&1); then echo "bench-run: failed: $*" >&2; echo "$out" | tail -3 >&2; exit 1; fi
  e=$(date +%s%N)
  echo $(( (e - s) / 1000000 ))
}
# The oci backend (runc) when it can run here: root and a runtime.
oci=0
if [ "$(id -u)" = 0 ] && command -v runc >/dev/null; then
  (cd "$ws" && "$bin" run --backend oci -- true >/dev/null 2>&1) && oci=1 # first use unpacks the image
fi
# gVisor through the same backend, when runsc is installed.
gv=0
gvcfg=$(mktemp -d)
trap 'rm -rf "$ws" "$aw" "$gvcfg" "$sc"' EXIT
printf '[sandbox]\nbackend = "oci"\nruntime = "runsc"\n' > "$gvcfg/triage.toml"
if [ "$oci" = 1 ] && command -v runsc >/dev/null; then
  (cd "$ws" && "$bin" run --config "$gvcfg/triage.toml" -- true >/dev/null 2>&1) && gv=1
fi
# The sandbox's seccomp profile, as its create request carries it.
(cd "$ws" && "$bin" render --role agent --backend docker 2>/dev/null) | python3 -c 'import json,sys
for o in json.load(sys.stdin)["create"]["host_config"]["SecurityOpt"]:
    if o.startswith("seccomp="): sys.stdout.write(o[len("seccomp="):])' > "$sc"
[ -s "$sc" ] || { echo "bench-run: no seccomp profile in the rendered create request" >&2; exit 1; }
ours=(); staged=(); theirs=(); ocis=(); gvs=()
for _ in $(seq 1 "$n"); do
  ours+=("$(cd "$ws" && ms "$bin" run -- true)")
  if [ "$oci" = 1 ]; then ocis+=("$(cd "$ws" && ms "$bin" run --backend oci -- true)"); fi
  if [ "$gv" = 1 ]; then gvs+=("$(cd "$ws" && ms "$bin" run --config "$gvcfg/triage.toml" -- true)"); fi
  staged+=("$(cd "$aw" && ms "$bin" run --role agent -- true)")
  theirs+=("$(ms docker run --rm --network none --cap-drop ALL --security-opt no-new-privileges \
    --security-opt seccomp="$sc" --read-only --init --pids-limit 512 --memory 1g --memory-swap 1g \
    --cpus 1 --ulimit nofile=4096:4096 --ulimit fsize=1073741824:1073741824 --ulimit core=0:0 \
    --ipc private --cgroupns private --user 65534:65534 \
    --tmpfs /tmp:rw,size=268435456,nosuid,nodev,exec,mode=1777 \
    --tmpfs /home/sandbox:rw,size=268435456,nosuid,nodev,exec,mode=700,uid=65534,gid=65534 \
    "$image" true)")
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
o=$(median "${ours[@]}"); s=$(median "${staged[@]}"); t=$(median "${theirs[@]}")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a/b}'; }
echo "cold run, median of $n: docker run --rm ${t} ms; triage-sandbox run ${o} ms (ratio $(ratio "$o" "$t")); agent run with staged outputs ${s} ms (ratio $(ratio "$s" "$t"))"
if [ "$oci" = 1 ]; then
  c=$(median "${ocis[@]}")
  echo "cold run on oci (runc), median of $n: ${c} ms (ratio to docker run --rm $(ratio "$c" "$t"))"
fi
if [ "$gv" = 1 ]; then
  g=$(median "${gvs[@]}")
  echo "cold run on oci (runsc, gVisor), median of $n: ${g} ms (ratio to docker run --rm $(ratio "$g" "$t"))"
fi
