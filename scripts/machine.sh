# shellcheck shell=bash
# The machine set-up triage-sandbox's docker backend needs, as functions
# that scripts/setup.sh (this repository's tests) and scripts/action.sh
# (the GitHub Action) both source. Each step is skipped when already done.
#   ts_install_packages PKG...    apt-get install what is missing
#   ts_start_dockerd              start dockerd if no daemon answers
#   ts_build_image BINARY [IMAGE] build the sandbox image if it is missing
#                                 (offline base via debootstrap when
#                                 debian:bookworm-slim cannot be pulled)
#   ts_podman_image [IMAGE]       load the sandbox image from dockerd into
#                                 Podman's own store if Podman lacks it
# ts_repo is the repository root (images/ lives there).

ts_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

ts_log() { echo "${ts_log_prefix:-setup}: $*" >&2; }
ts_as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

ts_install_packages() {
  [ $# -gt 0 ] || return 0
  ts_log "installing $*"
  ts_as_root apt-get update -qq
  ts_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

ts_start_dockerd() {
  docker info >/dev/null 2>&1 && return 0
  ts_log "starting dockerd"
  ts_as_root mkdir -p /var/log
  # setsid: the daemon outlives this script (CI runs the tests after it).
  ts_as_root setsid dockerd >/var/log/triage-sandbox-dockerd.log 2>&1 < /dev/null &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  docker info >/dev/null 2>&1 && return 0
  ts_log "dockerd did not start; see /var/log/triage-sandbox-dockerd.log"
  tail -20 /var/log/triage-sandbox-dockerd.log >&2
  return 1
}

ts_build_image() {
  local bin=$1 image=${2:-${TRIAGE_SANDBOX_IMAGE:-triage-sandbox:latest}} base=${BASE_IMAGE:-}
  docker image inspect "$image" >/dev/null 2>&1 && return 0
  if [ -z "$base" ]; then
    if docker image inspect debian:bookworm-slim >/dev/null 2>&1 || timeout 60 docker pull -q debian:bookworm-slim >/dev/null 2>&1; then
      base=debian:bookworm-slim
    else
      ts_log "debian:bookworm-slim cannot be pulled: building an offline base with debootstrap"
      "$ts_repo/images/build-base.sh" triage-sandbox-base:bookworm
      base=triage-sandbox-base:bookworm
    fi
  fi
  ts_log "building $image from $base"
  "$bin" image build --base "$base" --tag "$image"
}

ts_podman_image() {
  local image=${1:-${TRIAGE_SANDBOX_IMAGE:-triage-sandbox:latest}}
  command -v podman >/dev/null 2>&1 || return 0
  ts_as_root podman image exists "$image" && return 0
  ts_log "loading $image into Podman's store (Podman keeps its images apart from dockerd's)"
  docker save "$image" | ts_as_root podman load -q >/dev/null
}
