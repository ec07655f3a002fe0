#!/usr/bin/env bash
# Builds the sandbox base image offline: debootstrap a minimal Debian from the
# machine's own apt mirror, then `docker import` it. For machines that cannot
# pull debian:bookworm-slim (air-gapped networks, this project's CI).
#
#   images/build-base.sh [TAG]        default TAG: triage-sandbox-base:bookworm
#   MIRROR=http://host/debian images/build-base.sh
set -euo pipefail

tag=${1:-triage-sandbox-base:bookworm}
suite=${SUITE:-bookworm}

if docker image inspect "$tag" >/dev/null 2>&1 && [ -z "${FORCE:-}" ]; then
  echo "base image $tag already present (FORCE=1 rebuilds)" >&2
  exit 0
fi
command -v debootstrap >/dev/null || { echo "debootstrap missing: apt-get install -y debootstrap" >&2; exit 1; }

# The mirror apt already uses on this machine, unless MIRROR says otherwise.
mirror=${MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$(grep -hoE '^(URIs:|deb) +[^ ]+' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null \
    | awk '{print $2}' | grep -v -- '-security' | head -n1 || true)
  mirror=${mirror:-http://deb.debian.org/debian}
fi

root=$(mktemp -d /var/tmp/triage-base.XXXXXX)
trap 'rm -rf "$root"' EXIT
echo "debootstrap $suite from $mirror into $root" >&2
debootstrap --variant=minbase \
  --include=python3,git,ca-certificates,coreutils,procps \
  "$suite" "$root" "$mirror" >&2
# Keep the image small and free of host-specific state.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb "$root"/tmp/*
tar -C "$root" -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["/bin/bash"]' - "$tag" >&2
echo "built $tag" >&2
