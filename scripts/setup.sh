#!/usr/bin/env bash
# The main job's machine set-up (scripts/main.sh runs it, then the selftest
# on the default backend, docker), idempotent, each step skipped when done:
#   - installs docker.io, debootstrap and chromium from Debian if missing,
#     in one apt-get call (chromium on the host: the default
#     toolchain = "host" mounts the host's /usr over the image's, so the
#     selftest's browser check runs the host's); with TRIAGE_SANDBOX_GVISOR=1
#     also runsc (gVisor), registered with the Docker daemon as runtime
#     "runsc",
#   - starts dockerd if no daemon answers,
#   - builds the static binaries into bin/: triage-sandbox and
#     triage-sandbox-inside; with TRIAGE_SANDBOX_KUBE=1 also
#     triage-sandbox-kube (the same command with the kubernetes backend,
#     build tag kubernetes; the default binary hands --backend kubernetes
#     to it, so client-go costs the default one nothing),
#   - builds the sandbox image (offline base via debootstrap when
#     debian:bookworm-slim cannot be pulled).
# The Go build runs beside apt, dockerd and the base image, which wait on
# the network and the disk more than on the CPU.
# What only the tests need (the kubernetes test cluster's binaries, gVisor's
# runsc for its node, Podman, pytest, npm) is scripts/setup-tests.sh's.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/machine.sh
. scripts/machine.sh

log() { ts_log "$@"; }
as_root() { ts_as_root "$@"; }

# build_binaries: -buildvcs=auto (over a GOFLAGS that turns it off): the CLI
# runs the small in-sandbox binary only when both carry the same clean git
# revision; otherwise it runs itself inside sandboxes (slower to start,
# still right). bin/triage-sandbox is the small front (version, and every
# other command handed to the full CLI, bin/triage-sandbox-cli, beside it).
build_binaries() {
  CGO_ENABLED=0 go build -buildvcs=auto -o bin/triage-sandbox ./cmd/triage-sandbox-front
  CGO_ENABLED=0 go build -buildvcs=auto -o bin/triage-sandbox-cli ./cmd/triage-sandbox
  CGO_ENABLED=0 go build -buildvcs=auto -o bin/triage-sandbox-inside ./cmd/triage-sandbox-inside
  if [ "${TRIAGE_SANDBOX_KUBE:-0}" = 1 ]; then
    CGO_ENABLED=0 go build -tags kubernetes -o bin/triage-sandbox-kube ./cmd/triage-sandbox
  fi
}

mkdir -p bin
build_log=$(mktemp)
build_pid=
# An early exit (a failed apt-get) waits for the build beside it, so it
# leaves no go process behind (killing the subshell would not end its go).
trap '[ -z "$build_pid" ] || wait "$build_pid" 2>/dev/null || true; rm -f "$build_log"' EXIT
built="bin/triage-sandbox, bin/triage-sandbox-cli, bin/triage-sandbox-inside"
about="about 1 min 15 s on 2 cores the first time"
if [ "${TRIAGE_SANDBOX_KUBE:-0}" = 1 ]; then
  built="$built, bin/triage-sandbox-kube"
  about="about 2 min 10 s on 2 cores the first time"
fi
build_start=$SECONDS
log "building $built (static) beside the steps below ($about)"
build_binaries >"$build_log" 2>&1 &
build_pid=$!

# shellcheck disable=SC2046 # one package name a word
ts_install_packages $(ts_main_packages)
ts_start_dockerd

# gVisor through Docker: the daemon must know runsc, with its own
# loopback-only network stack (it refuses the daemon's namespace otherwise)
# and the container's seccomp profile loaded inside.
if [ "${TRIAGE_SANDBOX_GVISOR:-0}" = 1 ] && ! docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'; then
  log "registering runsc with the Docker daemon"
  as_root python3 - <<'PY'
import json, os
path = "/etc/docker/daemon.json"
cfg = json.load(open(path)) if os.path.exists(path) else {}
cfg.setdefault("runtimes", {})["runsc"] = {"path": "/usr/bin/runsc", "runtimeArgs": ["--network=none", "--oci-seccomp"]}
os.makedirs("/etc/docker", exist_ok=True)
json.dump(cfg, open(path, "w"), indent=2)
PY
  as_root pkill -HUP -x dockerd
  for _ in $(seq 1 20); do docker info --format '{{json .Runtimes}}' | grep -q '"runsc"' && break; sleep 0.5; done
fi

# The image's base needs the daemon, not the binaries: made while they build.
image=${TRIAGE_SANDBOX_IMAGE:-triage-sandbox:latest}
base=${BASE_IMAGE:-}
if [ -z "$base" ] && ! docker image inspect "$image" >/dev/null 2>&1; then
  base=$(ts_image_base)
fi

if ! wait "$build_pid"; then
  build_pid=
  cat "$build_log" >&2
  log "building $built failed (above)"
  exit 1
fi
build_pid=
log "built $built in $(ts_duration $((SECONDS - build_start)))"

BASE_IMAGE=$base ts_build_image bin/triage-sandbox "$image"
log "ready in $(ts_duration "$SECONDS"): $(docker version --format 'engine {{.Server.Version}}, API {{.Server.APIVersion}}')"
