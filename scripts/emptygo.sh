# shellcheck shell=bash
# emptygo OUT: build an empty static Go program at OUT (an absolute path),
# the floor of any Go program's start: the benchmark scripts' yardstick.
# Sourced by them.
emptygo() {
  local src=$1.src
  mkdir -p "$src"
  printf 'package main\n\nfunc main() {}\n' >"$src/main.go"
  printf 'module empty\n\ngo 1.22\n' >"$src/go.mod"
  (cd "$src" && CGO_ENABLED=0 go build -o "$1" .) || { rm -rf "$src"; return 1; }
  rm -rf "$src"
}
