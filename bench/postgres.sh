#!/usr/bin/env bash
# The PostgreSQL store beside the SQLite store, in one run on one machine.
#
# 1. Durable tasks created and completed per second, with end-to-end latency:
#    blocking A2A SendMessage (each request creates a task, the scripted agent
#    echoes it, the answer is the completed task), CONNS connections, SECS seconds,
#    against: one node on SQLite; one node on PostgreSQL; two nodes on one
#    PostgreSQL database (CONNS/2 connections to each, both loads at once, rates
#    summed).
# 2. Cross-node event delivery: tasks created at RATE/s on node A (which runs the
#    turns) and followed over A2A SSE on node B (which runs none); latency from
#    each completed status's commit timestamp to its arrival on B (bench/src/bin/
#    fanout.rs). Also at LOW_RATE/s, to show the latency of an unloaded system.
#
#   bench/postgres.sh                       # defaults below
#   SECS=20 RATE=500 bench/postgres.sh
#   NO_BUILD=1 bench/postgres.sh            # use the release binaries as built
#
# PG_URL names the database (default: the local test database, trust auth); each
# run uses a schema of its own (taskwire_bench), dropped before and after, and
# each PostgreSQL phase starts with a CHECKPOINT.
# Everything shares the machine: server, database and load. Loopback only;
# bounded by about 4 x SECS + 2 x FAN_SECS plus start-up.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-15}
CONNS=${CONNS:-256}
RATE=${RATE:-1000}
LOW_RATE=${LOW_RATE:-100}
FAN_SECS=${FAN_SECS:-10}
PG_URL=${PG_URL:-postgres://postgres@127.0.0.1:5432/test}
SCHEMA=taskwire_bench
TARGET=${CARGO_TARGET_DIR:-target}

if [ -z "${NO_BUILD:-}" ]; then
  cargo build --release -p taskwire -p taskwire-bench --bin taskwire --bin a2a_load --bin fanout >&2
fi
BIN=$TARGET/release/taskwire
DIR=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; reset_schema drop; rm -rf "$DIR"' EXIT

psql_q() { psql -q -X -v ON_ERROR_STOP=1 "$PG_URL" -c "$1" >/dev/null 2>&1; }
checkpoint() { psql_q "CHECKPOINT" || true; }
reset_schema() {
  psql_q "DROP SCHEMA IF EXISTS $SCHEMA CASCADE" || true
  [ "${1:-}" = drop ] || psql_q "CREATE SCHEMA $SCHEMA"
  # Each phase starts from a checkpoint, so that the checkpoint one phase's WAL
  # triggers is not spread over the next phase (it needs a superuser or
  # pg_checkpoint; without one the phases simply overlap).
  [ "${1:-}" = drop ] || checkpoint
}
sep='?'; case "$PG_URL" in *\?*) sep='&' ;; esac
PG_STORE="$PG_URL${sep}options=-csearch_path%3D$SCHEMA"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start NAME STORE [FLAGS...]: starts a node; sets $port and $pid.
start() {
  local name=$1 store=$2; shift 2
  port=$(free_port)
  "$BIN" serve --listen "127.0.0.1:$port" --store "$store" --insecure-no-auth \
    --max-streams-per-principal 100000 "$@" >"$DIR/$name.log" 2>&1 &
  pid=$!
  for _ in $(seq 200); do
    curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && return 0
    sleep 0.05
  done
  echo "$name did not start:" >&2; cat "$DIR/$name.log" >&2; exit 1
}

# load PORT PID CONNS -> "rate p50 p99" (from a2a_load's first line)
load() {
  "$TARGET/release/a2a_load" "http://127.0.0.1:$1" send jsonrpc "$3" "$SECS" "$2" \
    | awk '/requests in/ {print $9, $12, $15}'
}

row() { printf '| %s | %s | %s | %s |\n' "$1" "$2" "$3" "$4"; }

echo "| setup | tasks/s | p50 µs | p99 µs |"
echo "|---|---:|---:|---:|"

rm -f "$DIR"/bench.db*
start sqlite "sqlite://$DIR/bench.db"
read -r rate p50 p99 < <(load "$port" "$pid" "$CONNS")
row "SQLite, 1 node" "$rate" "$p50" "$p99"
kill "$pid"; wait "$pid" 2>/dev/null || true

reset_schema
start pg1 "$PG_STORE"
read -r rate p50 p99 < <(load "$port" "$pid" "$CONNS")
row "PostgreSQL, 1 node" "$rate" "$p50" "$p99"
kill "$pid"; wait "$pid" 2>/dev/null || true

reset_schema
start pg2a "$PG_STORE"; pa=$port; ida=$pid
start pg2b "$PG_STORE"; pb=$port; idb=$pid
half=$((CONNS / 2))
load "$pa" "$ida" "$half" >"$DIR/a.out" &
la=$!
load "$pb" "$idb" "$half" >"$DIR/b.out" &
lb=$!
wait "$la" "$lb"
read -r ra a50 a99 <"$DIR/a.out"
read -r rb b50 b99 <"$DIR/b.out"
row "PostgreSQL, 2 nodes (sum; p50/p99 of node A, node B)" "$(awk -v a="$ra" -v b="$rb" 'BEGIN {print a + b}')" "$a50 / $b50" "$a99 / $b99"
kill "$ida" "$idb"; wait "$ida" "$idb" 2>/dev/null || true

echo
echo "Cross-node delivery (tasks created on A, run on A, followed on B):"
for r in "$LOW_RATE" "$RATE"; do
  reset_schema
  start fa "$PG_STORE"; pa=$port; ida=$pid
  start fb "$PG_STORE" --max-concurrent-turns 0; pb=$port; idb=$pid
  "$TARGET/release/fanout" "http://127.0.0.1:$pa" "http://127.0.0.1:$pb" "$r" "$FAN_SECS"
  kill "$ida" "$idb"; wait "$ida" "$idb" 2>/dev/null || true
done
