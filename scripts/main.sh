#!/usr/bin/env bash
# The main job: set the machine up, build, then run the selftest gate on the
# default backend for both roles. Exit status is the selftest's.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec bin/triage-sandbox selftest "$@"
