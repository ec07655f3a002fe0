#!/usr/bin/env bash
# Idempotent machine set-up for triage-sandbox's docker backend:
#   - installs docker.io, runc, debootstrap, python3-pytest and chromium
#     (the tests, the oci backend and the local backend's browser check use
#     them) from Debian if missing; with TRIAGE_SANDBOX_GVISOR=1 also runsc
#     (gVisor), registered with the Docker daemon as runtime "runsc",
#   - starts dockerd if no daemon answers,
#   - builds the static binary into bin/,
#   - builds the sandbox image (offline base via debootstrap when
#     debian:bookworm-slim cannot be pulled).
# Safe to run again; each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "setup: $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

need_pkgs=()
command -v dockerd >/dev/null 2>&1 || need_pkgs+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need_pkgs+=(debootstrap)
command -v docker >/dev/null 2>&1 || need_pkgs+=(docker.io)
# The real-project integration test copies Debian's pytest into a venv.
[ -d /usr/lib/python3/dist-packages/pytest ] || need_pkgs+=(python3-pytest)
# The oci backend runs bundles with runc; the local backend runs the host's
# own Chromium for the selftest's browser check.
command -v runc >/dev/null 2>&1 || need_pkgs+=(runc)
command -v chromium >/dev/null 2>&1 || need_pkgs+=(chromium)
gvisor=${TRIAGE_SANDBOX_GVISOR:-0}
if [ "$gvisor" = 1 ]; then command -v runsc >/dev/null 2>&1 || need_pkgs+=(runsc); fi
if [ ${#need_pkgs[@]} -gt 0 ]; then
  log "installing ${need_pkgs[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
  log "starting dockerd"
  as_root mkdir -p /var/log
  # setsid: the daemon outlives this script (CI runs the tests after it).
  as_root setsid dockerd >/var/log/triage-sandbox-dockerd.log 2>&1 < /dev/null &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  docker info >/dev/null 2>&1 || { log "dockerd did not start; see /var/log/triage-sandbox-dockerd.log"; tail -20 /var/log/triage-sandbox-dockerd.log >&2; exit 1; }
fi

# gVisor through Docker: the daemon must know runsc, with its own
# loopback-only network stack (it refuses the daemon's namespace otherwise)
# and the container's seccomp profile loaded inside.
if [ "$gvisor" = 1 ] && ! docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'; then
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

log "building bin/triage-sandbox (static)"
mkdir -p bin
CGO_ENABLED=0 go build -o bin/triage-sandbox ./cmd/triage-sandbox

image=${TRIAGE_SANDBOX_IMAGE:-triage-sandbox:latest}
if ! docker image inspect "$image" >/dev/null 2>&1; then
  base=${BASE_IMAGE:-}
  if [ -z "$base" ]; then
    if docker image inspect debian:bookworm-slim >/dev/null 2>&1 || timeout 60 docker pull -q debian:bookworm-slim >/dev/null 2>&1; then
      base=debian:bookworm-slim
    else
      log "debian:bookworm-slim cannot be pulled: building an offline base with debootstrap"
      images/build-base.sh triage-sandbox-base:bookworm
      base=triage-sandbox-base:bookworm
    fi
  fi
  log "building $image from $base"
  bin/triage-sandbox image build --base "$base" --tag "$image"
fi
log "ready: $(docker version --format 'engine {{.Server.Version}}, API {{.Server.APIVersion}}')"
