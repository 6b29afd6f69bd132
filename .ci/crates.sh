#!/usr/bin/env bash
# Each crate builds alone with only what it needs (issue 23): `cargo check -p
# <crate> --no-default-features` for every library crate, and the taskwire crate
# with each of its features alone. A warning fails the check as an error would
# (RUSTFLAGS is left alone so that the build shares the workspace's artifacts).
set -euo pipefail
cd "$(dirname "$0")/.."
LOG=$(mktemp)
trap 'rm -f "$LOG"' EXIT
check() {
  echo "-- cargo check $*"
  if ! cargo check --message-format short "$@" >"$LOG" 2>&1; then
    cat "$LOG"
    exit 1
  fi
  if grep -E '^(crates|bench)/.*: warning' "$LOG"; then
    echo "warnings building $*" >&2
    exit 1
  fi
}
for manifest in crates/*/Cargo.toml; do
  crate=$(basename "$(dirname "$manifest")")
  check -p "$crate" --no-default-features
done
for feature in sqlite postgres a2a grpc mcp agui cas conformance; do
  check -p taskwire --no-default-features --features "$feature"
done
echo "every crate builds alone, and taskwire with each feature alone"
