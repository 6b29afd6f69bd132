#!/usr/bin/env bash
# Instructions per request of `taskwire serve` under callgrind, for one RPC and
# binding of bench/a2a.sh (the same load generator, pinned the same way).
#
#   bench/callgrind.sh get grpc               # GetTask over gRPC, memory store
#   BIN=path/to/taskwire bench/callgrind.sh send jsonrpc
#   SECS=10 CONNS=64 OUT=/tmp/cg bench/callgrind.sh get grpc
#   SERVE_FLAGS='--auth-tokens /tmp/t' A2A_LOAD_TOKEN=tok bench/callgrind.sh get grpc
#
# The counters are zeroed once the load runs (start-up, connection set-up and
# the seed request are left out) and dumped after SECS seconds; the requests
# answered meanwhile are read from the server's request metric. Prints instructions per request; the profile is left in
# $OUT/callgrind.out.* for callgrind_annotate. Needs valgrind, taskset and the
# release binaries (built as bench/a2a.sh builds them, unless NO_BUILD is set).
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-get}
BINDING=${2:-grpc}
SECS=${SECS:-10}
CONNS=${CONNS:-64}
STORE=${STORE:-memory://}
TARGET=${CARGO_TARGET_DIR:-target}
if [ -z "${NO_BUILD:-}" ]; then
  cargo build --release -p taskwire -p taskwire-bench --bin taskwire --bin a2a_load >&2
fi
BIN=${BIN:-$TARGET/release/taskwire}
LOAD=${LOAD:-$TARGET/release/a2a_load}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
rm -f "$OUT"/callgrind.out.*
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
TOKIO_WORKER_THREADS=1 taskset -c 0 valgrind --tool=callgrind \
  --callgrind-out-file="$OUT/callgrind.out.%p" "$BIN" serve --listen "127.0.0.1:$port" \
  --store "$STORE" ${SERVE_FLAGS:-} >"$OUT/serve.log" 2>&1 &
vg=$!
trap 'kill -INT $vg 2>/dev/null || true; kill $(jobs -p) 2>/dev/null || true' EXIT
for _ in $(seq 300); do
  curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  sleep 0.2
done
# The request metric's count, summed over every label.
count() {
  curl -fs "http://127.0.0.1:$port/metrics" |
    awk '/^taskwire_http_request_duration_seconds_count/ {s += $NF} END {printf "%d\n", s}'
}
taskset -c 1 "$LOAD" "http://127.0.0.1:$port" "$MODE" "$BINDING" "$CONNS" $((SECS + 60)) \
  >"$OUT/load.out" &
load=$!
sleep 4
# The window: the load generator is stopped (SIGSTOP) while the counters are
# zeroed and dumped, so the requests answered in between are exactly the
# difference of the metric's counts (less the first scrape, counted when it has
# answered).
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
echo "requests: $requests, instructions: $total, per request: $((total / requests))"
echo "profile: $file"
