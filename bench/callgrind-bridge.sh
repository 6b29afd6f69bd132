#!/usr/bin/env bash
# Instructions per bridged request of a `taskwire serve --upstream a2a+http://…`
# under callgrind (issue #21, item 8), against the same request served directly.
#
#   bench/callgrind-bridge.sh                  # A2A→A2A: the bridge under callgrind
#   bench/callgrind-bridge.sh a2a direct       # the upstream alone under callgrind
#   bench/callgrind-bridge.sh mcp              # MCP→A2A
#   SECS=10 CONC=8 OUT=/tmp/cg NO_BUILD=1 bench/callgrind-bridge.sh
#   STORE=sqlite bench/callgrind-bridge.sh     # both servers on their default store,
#                                              # a SQLite file each (in $OUT);
#                                              # STORE=sqlite-normal: ?synchronous=normal
#   UPSCHEME=a2a+grpc bench/callgrind-bridge.sh  # the bridge reaches its upstream over
#                                              # A2A gRPC (default: a2a+http, JSON-RPC)
#
# The upstream is `taskwire serve --store memory://` (the scripted agent), run
# natively; in `bridged` mode the bridge (`--upstream a2a+http://…`, memory
# store) runs under callgrind. With STORE=sqlite both servers store their tasks
# in a SQLite file of their own instead, as `taskwire serve` does by default.
# The load is `bridge_load` (bench/bridge.sh's generator) pinned to core 1.
# The counters are zeroed once the load runs and dumped after SECS seconds,
# with the generator stopped (SIGSTOP) around both, so that the requests
# answered in between are the difference of the profiled server's request
# metric. Prints instructions per request; the profile is left
# in $OUT/callgrind.out.* for callgrind_annotate.
set -euo pipefail
cd "$(dirname "$0")/.."
PROTO=${1:-a2a}
KIND=${2:-bridged}
SECS=${SECS:-8}
CONC=${CONC:-8}
TARGET=${CARGO_TARGET_DIR:-target}
if [ -z "${NO_BUILD:-}" ]; then
  cargo build --release -p taskwire -p taskwire-bench --bin taskwire --bin bridge_load >&2
fi
BIN=${BIN:-$TARGET/release/taskwire}
LOAD=${LOAD:-$TARGET/release/bridge_load}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
rm -f "$OUT"/callgrind.out.* "$OUT"/*.db "$OUT"/*.db-wal "$OUT"/*.db-shm
case "${STORE:-memory}" in
  memory) up_store=memory:// bridge_store=memory:// ;;
  sqlite) up_store="sqlite://$OUT/upstream.db" bridge_store="sqlite://$OUT/bridge.db" ;;
  sqlite-normal)
    up_store="sqlite://$OUT/upstream.db?synchronous=normal"
    bridge_store="sqlite://$OUT/bridge.db?synchronous=normal"
    ;;
  *) echo "STORE is memory, sqlite or sqlite-normal" >&2; exit 2 ;;
esac
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
wait_ready() {
  for _ in $(seq 600); do
    curl -fs "http://127.0.0.1:$1/readyz" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "server on port $1 did not become ready" >&2
  exit 1
}
pids=()
trap 'for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done; kill $(jobs -p) 2>/dev/null || true' EXIT
up_port=$(free_port)
if [ "$KIND" = direct ]; then
  TOKIO_WORKER_THREADS=1 taskset -c 0 valgrind --tool=callgrind \
    --callgrind-out-file="$OUT/callgrind.out.%p" "$BIN" serve --listen "127.0.0.1:$up_port" \
    --store "$up_store" >"$OUT/upstream.log" 2>&1 &
  pids+=($!)
  vg=$!
  port=$up_port
else
  TOKIO_WORKER_THREADS=1 taskset -c 0 "$BIN" serve --listen "127.0.0.1:$up_port" \
    --store "$up_store" >"$OUT/upstream.log" 2>&1 &
  pids+=($!)
  wait_ready "$up_port"
  port=$(free_port)
  TOKIO_WORKER_THREADS=1 taskset -c 0 valgrind --tool=callgrind \
    --callgrind-out-file="$OUT/callgrind.out.%p" "$BIN" serve --listen "127.0.0.1:$port" \
    --store "$bridge_store" --upstream "${UPSCHEME:-a2a+http}://127.0.0.1:$up_port" >"$OUT/bridge.log" 2>&1 &
  pids+=($!)
  vg=$!
fi
wait_ready "$port"
# The request metric's count of the profiled server, summed over every label.
count() {
  curl -fs "http://127.0.0.1:$port/metrics" |
    awk '/^taskwire_http_request_duration_seconds_count/ {s += $NF} END {printf "%d\n", s}'
}
taskset -c 1 "$LOAD" "http://127.0.0.1:$port" "$PROTO" "$CONC" $((SECS + 120)) >"$OUT/load.out" &
load=$!
sleep 8
kill -STOP "$load"
sleep 1
before=$(count)
callgrind_control -z "$vg" >/dev/null
kill -CONT "$load"
sleep "$SECS"
kill -STOP "$load"
sleep 1
callgrind_control -d "$vg" >/dev/null
after=$(count)
kill "$load" 2>/dev/null || true
kill -CONT "$load" 2>/dev/null || true
wait "$load" 2>/dev/null || true
requests=$((after - before - 1))
file=$(ls -t "$OUT"/callgrind.out.* | head -1)
total=$(callgrind_annotate "$file" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}')
echo "$PROTO $KIND (${STORE:-memory} store): requests: $requests, instructions: $total, per request: $((total / requests))"
echo "profile: $file"
