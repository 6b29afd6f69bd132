#!/usr/bin/env bash
# Retention soak: does the sweeper keep up with the create rate?
#
# Runs `taskwire serve` with a short task TTL and drives it with blocking
# SendMessage (each one creates a task that completes at once) as fast as it
# answers, for SECS seconds, then idles for TAIL seconds. Every STEP seconds it
# prints the server's RSS, the number of tasks in the store (taskwire_tasks from
# /metrics, all states) and, for SQLite, the size of the database file with its
# write-ahead log. With a sweeper that keeps up, the task count levels off at
# about (create rate x (TTL + sweep interval)) and stays there while the load
# runs, RSS levels off with it, and the SQLite file stops growing once freed
# pages are reused; after the load both fall back (the task count to 0).
#
#   bench/retention-soak.sh                        # SQLite, TTL 2s, 120 s of load
#   STORE=memory SECS=60 TTL=1s bench/retention-soak.sh
#   NO_BUILD=1 bench/retention-soak.sh             # use the release binaries as built
#
# Load and server share the machine (no pinning): the figures are about growth,
# not speed. Loopback only; bounded by SECS + TAIL.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-120}
TAIL=${TAIL:-20}
TTL=${TTL:-2s}
STEP=${STEP:-10}
CONNS=${CONNS:-64}
STORE=${STORE:-sqlite}
TARGET=${CARGO_TARGET_DIR:-target}

if [ -z "${NO_BUILD:-}" ]; then
  cargo build --release -p taskwire -p taskwire-bench --bin taskwire --bin a2a_load >&2
fi
DIR=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$DIR"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
store="memory://"
[ "$STORE" = sqlite ] && store="sqlite://$DIR/soak.db"
"$TARGET/release/taskwire" serve --listen "127.0.0.1:$port" --store "$store" \
  --task-ttl "$TTL" >"$DIR/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
  curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  sleep 0.1
done

sample() {
  local rss tasks db swept
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
  local m
  m=$(curl -fs "http://127.0.0.1:$port/metrics" || true)
  tasks=$(printf '%s\n' "$m" | awk '/^taskwire_tasks\{/ {s += $2} END {print s + 0}')
  swept=$(printf '%s\n' "$m" | awk '/^taskwire_tasks_swept_total/ {print $2}')
  db=0
  if [ "$STORE" = sqlite ]; then
    db=$(du -cb "$DIR"/soak.db* 2>/dev/null | tail -1 | cut -f1)
  fi
  printf '| %s | %s | %s | %s | %s | %s |\n' "$1" "$2" "$((rss / 1024))" "$tasks" "${swept:-0}" "$((db / 1024 / 1024))"
}

echo "store=$STORE ttl=$TTL load=${SECS}s conns=$CONNS"
echo "| t (s) | phase | RSS (MiB) | tasks in store | swept | db+wal (MiB) |"
echo "|---:|---|---:|---:|---:|---:|"
"$TARGET/release/a2a_load" "http://127.0.0.1:$port" send jsonrpc "$CONNS" "$SECS" "$pid" \
  >"$DIR/load.out" 2>&1 &
load=$!
t=0
sample 0 start
while kill -0 "$load" 2>/dev/null; do
  sleep "$STEP"
  t=$((t + STEP))
  sample "$t" load
done
end=$((t + TAIL))
while [ "$t" -lt "$end" ]; do
  sleep "$STEP"
  t=$((t + STEP))
  sample "$t" idle
done
echo
grep -E 'req/s|p50|server CPU' "$DIR/load.out" || cat "$DIR/load.out"
kill -INT "$pid"
wait "$pid" 2>/dev/null || true
