# shellcheck shell=bash
# The machine set-up triage-sandbox's docker backend needs, as functions
# that scripts/setup.sh (the main job), scripts/setup-tests.sh (what only
# the tests need), scripts/kube.sh and scripts/action.sh (the GitHub Action)
# source. Each step is skipped when already done.
#   ts_main_packages              the main job's Debian packages that are missing
#   ts_kube_packages              the kubernetes test cluster's that are missing
#   ts_test_packages              the other tests' that are missing
#   ts_install_packages PKG...    apt-get install them, in one call (each
#                                 call pays an apt-get update: batch them)
#   ts_timed WHAT ABOUT CMD...    run CMD after a progress line saying WHAT
#                                 and how long it takes (ABOUT), then say
#                                 how long it took
#   ts_start_dockerd              start dockerd if no daemon answers
#   ts_image_base                 print the base to build the image from:
#                                 debian:bookworm-slim, or an offline base
#                                 built via debootstrap when it cannot be
#                                 pulled
#   ts_build_image BINARY [IMAGE] build the sandbox image if it is missing
#                                 (from BASE_IMAGE, else ts_image_base)
#   ts_podman_image [IMAGE]       load the sandbox image from dockerd into
#                                 Podman's own store if Podman lacks it
# ts_repo is the repository root (images/ lives there).

ts_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

ts_log() { echo "${ts_log_prefix:-setup}: $*" >&2; }
ts_as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# ts_main_packages: what the main job (the selftest on the docker backend)
# needs: the daemon, debootstrap for the offline base, and Chromium on the
# host, since the default toolchain = "host" mounts the host's /usr over
# the image's and the selftest's browser check runs the Chromium found
# there. With TRIAGE_SANDBOX_GVISOR=1, Debian's runsc for the daemon.
ts_main_packages() {
  { command -v dockerd && command -v docker; } >/dev/null 2>&1 || echo docker.io
  command -v debootstrap >/dev/null 2>&1 || echo debootstrap
  # The names the browser check looks for on PATH (probe.browserNames).
  command -v chromium chromium-browser google-chrome headless_shell chrome >/dev/null 2>&1 || echo chromium
  if [ "${TRIAGE_SANDBOX_GVISOR:-0}" = 1 ]; then
    command -v runsc >/dev/null 2>&1 || echo runsc
  fi
  return 0
}

# ts_kube_packages: the kubernetes backend's test cluster takes etcd,
# containerd, runc and the CNI plugins from Debian (jq edits each
# container's spec for the node's gvisor RuntimeClass; iptables and ipset
# are what its NetworkPolicy controller, kube-router, writes its rules
# with).
ts_kube_packages() {
  command -v etcd >/dev/null 2>&1 || [ -x /usr/bin/etcd ] || echo etcd-server
  command -v containerd >/dev/null 2>&1 || echo containerd
  command -v runc >/dev/null 2>&1 || echo runc
  command -v strace >/dev/null 2>&1 || echo strace
  ts_have_package containernetworking-plugins || echo containernetworking-plugins
  command -v jq >/dev/null 2>&1 || echo jq
  ts_have_package iptables || echo iptables
  ts_have_package ipset || echo ipset
  return 0
}

# ts_test_packages: what the other tests need: runc (the oci backend),
# Debian's pytest (copied into a venv by the real-project test), Podman
# (the docker backend's test against its Docker-compatible service), npm
# (the MCP client the tests use is installed from the npm registry),
# bubblewrap (the yardstick of CI's bench mode for the local backend).
ts_test_packages() {
  command -v runc >/dev/null 2>&1 || echo runc
  command -v strace >/dev/null 2>&1 || echo strace
  ts_have_package python3-pytest || echo python3-pytest
  command -v podman >/dev/null 2>&1 || echo podman
  command -v npm >/dev/null 2>&1 || printf '%s\n' nodejs npm
  # CI's bench mode pairs pooled local against it (scripts/bench-local.sh).
  command -v bwrap >/dev/null 2>&1 || echo bubblewrap
  return 0
}

# ts_have_package: whether dpkg has the package installed (for packages
# that bring no command to look for).
ts_have_package() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q ' installed$'
}

ts_install_packages() {
  [ $# -gt 0 ] || return 0
  # The same package may be named by two lists: apt-get takes it once.
  ts_log "installing $* (one apt-get call)"
  ts_as_root apt-get update -qq
  ts_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# ts_timed runs "$@" between a line saying what starts and how long it is
# expected to take, and one saying how long it took, so that a long set-up
# never looks stuck.
ts_timed() {
  local what=$1 about=$2 start=$SECONDS
  shift 2
  ts_log "$what${about:+ ($about)}"
  "$@"
  ts_log "$what: done in $(ts_duration $((SECONDS - start)))"
}

# ts_duration prints seconds as "1 min 5 s".
ts_duration() {
  if [ "$1" -ge 60 ]; then echo "$(($1 / 60)) min $(($1 % 60)) s"; else echo "$1 s"; fi
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

ts_image_base() {
  local b
  for b in debian:bookworm-slim triage-sandbox-base:bookworm; do
    docker image inspect "$b" >/dev/null 2>&1 && { echo "$b"; return 0; }
  done
  if timeout 60 docker pull -q debian:bookworm-slim >/dev/null 2>&1; then
    echo debian:bookworm-slim
    return 0
  fi
  ts_timed "debian:bookworm-slim cannot be pulled: building an offline base with debootstrap" \
    "about 2 min 20 s the first time" "$ts_repo/images/build-base.sh" triage-sandbox-base:bookworm >&2
  echo triage-sandbox-base:bookworm
}

ts_build_image() {
  local bin=$1 image=${2:-${TRIAGE_SANDBOX_IMAGE:-triage-sandbox:latest}} base=${BASE_IMAGE:-}
  docker image inspect "$image" >/dev/null 2>&1 && return 0
  [ -n "$base" ] || base=$(ts_image_base)
  ts_timed "building $image from $base" "about 1 min 30 s to 3 min 30 s the first time" \
    "$bin" image build --base "$base" --tag "$image"
}

ts_podman_image() {
  local image=${1:-${TRIAGE_SANDBOX_IMAGE:-triage-sandbox:latest}}
  command -v podman >/dev/null 2>&1 || return 0
  ts_as_root podman image exists "$image" && return 0
  ts_timed "loading $image into Podman's store (Podman keeps its images apart from dockerd's)" \
    "about 1 min" ts_podman_load "$image"
}

ts_podman_load() { docker save "$1" | ts_as_root podman load -q >/dev/null; }
