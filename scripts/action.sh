#!/usr/bin/env bash
# The GitHub Action's logic (action.yml runs it; its tests run it here):
# install or build triage-sandbox, set the machine up for the backend as
# scripts/setup.sh does, run the selftest gate, write JUnit, and fail when
# the sandbox did not hold. Inputs come as environment variables:
#   TS_VERSION     "" builds the action's own source; otherwise a version
#                  for `go install ...@VERSION`
#   TS_BINARY      a static triage-sandbox binary to use as is (skips both)
#   TS_BACKEND     docker (default), oci or local
#   TS_ROLES       all (default), agent or reproducer
#   TS_CONFIG      triage.toml ("" finds it from TS_WORKDIR up)
#   TS_WORKDIR     the workspace to test (default: the current directory)
#   TS_JUNIT       the JUnit file to write (default: triage-sandbox-selftest.xml)
#   TS_SETUP       1 (default) installs and starts what the backend needs
# Exit: 0 the gate passed; 1 a check failed or was inconclusive, the backend
# cannot run, or the set-up failed. Never a pass without a report.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/machine.sh
. "$here/machine.sh"
ts_log_prefix=triage-sandbox-gate

backend=${TS_BACKEND:-docker}
roles=${TS_ROLES:-all}
workdir=${TS_WORKDIR:-.}
junit=${TS_JUNIT:-triage-sandbox-selftest.xml}
case "$backend" in docker|oci|local) ;; *) ts_log "backend $backend: use docker, oci or local"; exit 1 ;; esac
case "$roles" in all|agent|reproducer) ;; *) ts_log "roles $roles: use all, agent or reproducer"; exit 1 ;; esac
case "$junit" in /*) ;; *) junit="$(pwd)/$junit" ;; esac

# install puts the binary at $bin.
install() {
  if [ -n "${TS_BINARY:-}" ]; then
    bin=$TS_BINARY
    return
  fi
  local dir=${RUNNER_TEMP:-${TMPDIR:-/tmp}}/triage-sandbox-bin
  mkdir -p "$dir"
  bin=$dir/triage-sandbox
  if [ -z "${TS_VERSION:-}" ]; then
    ts_log "building triage-sandbox from $ts_repo (static)"
    # $bin is the small front; it hands every command but version to the
    # full CLI beside it. The small in-sandbox binary beside them, used when
    # it carries the CLI's clean git revision (package insidebin).
    (cd "$ts_repo" && CGO_ENABLED=0 go build -buildvcs=auto -o "$bin" ./cmd/triage-sandbox-front &&
      CGO_ENABLED=0 go build -buildvcs=auto -o "$dir/triage-sandbox-cli" ./cmd/triage-sandbox &&
      CGO_ENABLED=0 go build -buildvcs=auto -o "$dir/triage-sandbox-inside" ./cmd/triage-sandbox-inside)
  else
    ts_log "installing triage-sandbox $TS_VERSION (static)"
    GOBIN=$dir CGO_ENABLED=0 go install "github.com/triage-sandbox/triage-sandbox/cmd/triage-sandbox@$TS_VERSION"
    # Versions before it have no small in-sandbox binary: the CLI runs itself.
    GOBIN=$dir CGO_ENABLED=0 go install "github.com/triage-sandbox/triage-sandbox/cmd/triage-sandbox-inside@$TS_VERSION" 2>/dev/null ||
      ts_log "triage-sandbox $TS_VERSION has no triage-sandbox-inside: the CLI runs itself inside sandboxes"
  fi
}

# setup installs and starts what the backend needs.
setup() {
  [ "${TS_SETUP:-1}" = 1 ] || return 0
  local pkgs=()
  case "$backend" in
    docker)
      command -v docker >/dev/null 2>&1 || pkgs+=(docker.io)
      command -v debootstrap >/dev/null 2>&1 || pkgs+=(debootstrap)
      ;;
    oci) command -v runc >/dev/null 2>&1 || pkgs+=(runc) ;;
  esac
  ts_install_packages ${pkgs[@]+"${pkgs[@]}"}
  # The oci backend unpacks its root from the docker image too.
  if [ "$backend" != local ]; then
    ts_start_dockerd
    ts_build_image "$bin"
  fi
}

# summary appends the report to the job summary, when there is one.
summary() {
  local status=$1 report=$2
  [ -n "${GITHUB_STEP_SUMMARY:-}" ] || return 0
  {
    echo "### triage-sandbox selftest gate: $status"
    echo
    echo '```'
    cat "$report"
    echo '```'
  } >>"$GITHUB_STEP_SUMMARY"
}

install
setup
# Later steps of the job (the agent's) find the binary that was tested.
[ -z "${GITHUB_PATH:-}" ] || dirname "$bin" >>"$GITHUB_PATH"
args=(selftest --backend "$backend" --role "$roles" --junit "$junit")
[ -z "${TS_CONFIG:-}" ] || args+=(--config "$TS_CONFIG")
report=$(mktemp)
trap 'rm -f "$report"' EXIT
ts_log "running: triage-sandbox ${args[*]} (in $workdir)"
set +e
(cd "$workdir" && "$bin" "${args[@]}") 2>&1 | tee "$report"
code=${PIPESTATUS[0]}
set -e
status=passed
case "$code" in
  0) [ -s "$junit" ] || { status="failed: no JUnit report was written"; code=1; } ;;
  1) status="failed: a check failed or was inconclusive (the sandbox did not hold)" ;;
  2) status="failed: the $backend backend cannot run here" ;;
  *) status="failed: selftest exited $code" ;;
esac
[ -z "${GITHUB_OUTPUT:-}" ] || { echo "result=${status%%:*}"; echo "junit=$junit"; } >>"$GITHUB_OUTPUT"
summary "$status" "$report"
ts_log "$status"
[ "$code" = 0 ] || exit 1
