#!/usr/bin/env bash
# What this machine charges for what our starts are made of (page faults,
# forks, execs, a Go program's start), in absolute figures: the yardstick
# for reading the other scripts' ratios across machines. One line from
# scripts/machinecost; N runs of each start (default 200). It judges
# nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-200}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=scripts/emptygo.sh
. scripts/emptygo.sh
emptygo "$tmp/empty-go"
go build -o "$tmp/machinecost" ./scripts/machinecost
"$tmp/machinecost" -n "$n" -go "$tmp/empty-go"
