#!/usr/bin/env bash
# Cold build times on this machine: a fresh clone of the current checkout with an
# empty target directory (crates already downloaded into ~/.cargo, so no network
# time is counted). Prints clone-to-first-/healthz (the README's first command:
# a release build of taskwire, then `taskwire serve` answering /healthz) and the
# cold test build (`cargo test --workspace --no-run` in its own empty target).
#
#   bench/cold-build.sh            # both
#   ONLY=release bench/cold-build.sh
set -euo pipefail
src=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
work=$(mktemp -d /tmp/taskwire-cold.XXXXXX)
trap 'kill "${server:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
git clone -q "$src" "$work/src"
cd "$work/src"
cargo fetch -q
export CARGO_INCREMENTAL=0

if [ "${ONLY:-release}" = release ] || [ -z "${ONLY:-}" ]; then
  start=$(date +%s)
  CARGO_TARGET_DIR="$work/release-target" cargo build -q --release -p taskwire
  "$work/release-target/release/taskwire" serve --listen 127.0.0.1:0 --store memory:// >"$work/serve.out" 2>"$work/serve.err" &
  server=$!
  until addr=$(sed -n 's/^listening on //p' "$work/serve.out") && [ -n "$addr" ]; do sleep 0.1; done
  curl -sf "http://$addr/healthz" >/dev/null
  end=$(date +%s)
  kill "$server"; wait "$server" 2>/dev/null || true; server=
  echo "clone to first /healthz (cold release build): $((end - start)) s; target $(du -sh "$work/release-target" | cut -f1)"
  rm -rf "$work/release-target"
fi

if [ "${ONLY:-test}" = test ] || [ -z "${ONLY:-}" ]; then
  start=$(date +%s)
  CARGO_TARGET_DIR="$work/test-target" cargo test -q --workspace --no-run 2>/dev/null
  end=$(date +%s)
  echo "cold test build (cargo test --workspace --no-run): $((end - start)) s; target $(du -sh "$work/test-target" | cut -f1)"
fi
