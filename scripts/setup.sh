#!/usr/bin/env bash
# Idempotent machine set-up for triage-sandbox's docker backend:
#   - installs docker.io, runc, debootstrap, python3-pytest and chromium
#     (the tests, the oci backend and the local backend's browser check use
#     them) from Debian if missing; with TRIAGE_SANDBOX_GVISOR=1 also runsc
#     (gVisor), registered with the Docker daemon as runtime "runsc",
#   - starts dockerd if no daemon answers,
#   - builds the static binaries into bin/: triage-sandbox, and
#     triage-sandbox-kube (the same command with the kubernetes backend,
#     build tag kubernetes; the default binary hands --backend kubernetes
#     to it, so client-go costs the default one nothing),
#   - builds the sandbox image (offline base via debootstrap when
#     debian:bookworm-slim cannot be pulled),
#   - makes the kubernetes backend's test cluster binaries (scripts/kube.sh,
#     cached), gVisor's runsc for its node's gvisor RuntimeClass among them
#     (scripts/gvisor.sh).
#   - installs podman and loads the sandbox image into its store (the
#     docker backend's test against Podman's Docker-compatible service).
#     Podman keeps its own storage (/var/lib/containers) and, for the
#     sandboxes' network "none", touches no iptables rule or bridge of
#     dockerd's.
# Safe to run again; each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/machine.sh
. scripts/machine.sh

log() { ts_log "$@"; }
as_root() { ts_as_root "$@"; }

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
# backends/docker's TestSelftestOnPodman runs the selftest against Podman.
command -v podman >/dev/null 2>&1 || need_pkgs+=(podman)
gvisor=${TRIAGE_SANDBOX_GVISOR:-0}
if [ "$gvisor" = 1 ]; then command -v runsc >/dev/null 2>&1 || need_pkgs+=(runsc); fi
ts_install_packages ${need_pkgs[@]+"${need_pkgs[@]}"}
ts_start_dockerd

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

log "building bin/triage-sandbox, bin/triage-sandbox-inside and bin/triage-sandbox-kube (static)"
mkdir -p bin
# -buildvcs=auto (over a GOFLAGS that turns it off): the CLI runs the small
# in-sandbox binary only when both carry the same clean git revision;
# otherwise it runs itself inside sandboxes (slower to start, still right).
CGO_ENABLED=0 go build -buildvcs=auto -o bin/triage-sandbox ./cmd/triage-sandbox
CGO_ENABLED=0 go build -buildvcs=auto -o bin/triage-sandbox-inside ./cmd/triage-sandbox-inside
CGO_ENABLED=0 go build -tags kubernetes -o bin/triage-sandbox-kube ./cmd/triage-sandbox

ts_build_image bin/triage-sandbox
# The kubernetes backend's test cluster: etcd, containerd and CNI from
# Debian, kube-apiserver and kubelet built once into a cache (the first
# build takes about 20 minutes on 2 cores; later runs reuse it), and runsc
# for the node's gvisor RuntimeClass (scripts/gvisor.sh, cached too).
scripts/kube.sh >/dev/null
ts_podman_image
log "ready: $(docker version --format 'engine {{.Server.Version}}, API {{.Server.APIVersion}}')"
