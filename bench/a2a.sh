#!/usr/bin/env bash
# The A2A benchmark of issue 3, as its closing note reports it: `taskwire serve`
# pinned to core 0 with one runtime worker, the load generator (a2a_load, 64
# keep-alive connections) pinned to core 1, so that the server's CPU per request is
# what is measured.
#
#   bench/a2a.sh                 # GetTask and SendMessage, JSON-RPC and gRPC, memory and SQLite
#   SECS=30 bench/a2a.sh         # longer runs
#   GROW=1 bench/a2a.sh          # also: SendMessage for GROW_SECS (default 120) on SQLite,
#                                # latency per 10 s window while the store grows
#   GROW=1 GROW_STORE=memory bench/a2a.sh   # the same on the memory store
#   ONLY_GROW=1 GROW=1 bench/a2a.sh         # only the growth run
#
# Needs `taskset` (util-linux) and two cores. Builds the release binaries first.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-10}
CONNS=${CONNS:-64}
cargo build --release -p taskwire -p taskwire-bench --bin taskwire --bin a2a_load >&2
# Right after a build the kernel is still writing the build's output back to disk,
# and that work lands on the measured cores (seen: SendMessage 26-28 µs instead
# of 19-21 µs in the first runs). Flush it first.
sync
BIN=target/release
DIR=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$DIR"' EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# run <store-url> <get|send> <jsonrpc|grpc> <secs> [window]
run() {
  local store=$1 mode=$2 binding=$3 secs=$4 window=${5:-}
  local port
  port=$(free_port)
  TOKIO_WORKER_THREADS=1 taskset -c 0 "$BIN/taskwire" serve --listen "127.0.0.1:$port" \
    --store "$store" >"$DIR/serve.log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do
    curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    sleep 0.1
  done
  echo "## $mode / $binding / $store"
  taskset -c 1 "$BIN/a2a_load" "http://127.0.0.1:$port" "$mode" "$binding" "$CONNS" "$secs" "$pid" $window
  kill -INT "$pid"
  wait "$pid" 2>/dev/null || true
}

stores=(memory:// "sqlite://$DIR/bench.db")
if [ -n "${ONLY_GROW:-}" ]; then stores=(); fi
for store in "${stores[@]}"; do
  for binding in jsonrpc grpc; do
    for mode in get send; do
      rm -f "$DIR"/bench.db*
      run "$store" "$mode" "$binding" "$SECS"
    done
  done
done
if [ -n "${GROW:-}" ]; then
  rm -f "$DIR"/bench.db*
  case "${GROW_STORE:-sqlite}" in
    memory) grow_store=memory:// ;;
    sqlite) grow_store="sqlite://$DIR/bench.db" ;;
    *) echo "GROW_STORE must be memory or sqlite" >&2; exit 2 ;;
  esac
  run "$grow_store" send jsonrpc "${GROW_SECS:-120}" 10
fi
