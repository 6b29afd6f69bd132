#!/usr/bin/env bash
# Server CPU per request of two `taskwire serve` binaries, measured alternately in
# one run (absolute figures on these machines vary several-fold from day to day;
# ratios taken from interleaved runs do not). Same set-up as bench/a2a.sh: the
# server pinned to core 0 with one runtime worker, a2a_load pinned to core 1.
#
#   BASE=f906a75 bench/a2a-compare.sh      # builds BASE in a git worktree, and HEAD
#   BASE_BIN=path NEW_BIN=path bench/a2a-compare.sh   # two binaries built already
#   ROUNDS=5 SECS=6 STORE=memory:// bench/a2a-compare.sh
#   NO_BUILD=1 BASE_BIN=… NEW_BIN=… bench/a2a-compare.sh   # use target/release/a2a_load as it is
#   (target/ is $CARGO_TARGET_DIR where that is set; LOAD=path names another a2a_load)
#
# Prints one line per run and, per RPC and binding, the median server CPU per
# request of each binary and their ratio (new / base).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-6}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-64}
STORE=${STORE:-memory://}

if [ -z "${NO_BUILD:-}" ]; then
  cargo build --release -p taskwire -p taskwire-bench --bin taskwire --bin a2a_load >&2
fi
TARGET=${CARGO_TARGET_DIR:-target}
NEW_BIN=${NEW_BIN:-$TARGET/release/taskwire}
LOAD=${LOAD:-$TARGET/release/a2a_load}
if [ -z "${BASE_BIN:-}" ]; then
  if [ -z "${BASE:-}" ]; then
    echo "set BASE (a commit) or BASE_BIN (a binary)" >&2
    exit 2
  fi
  wt=target/bench-base-src
  rm -rf "$wt"
  git worktree add -f "$wt" "$BASE" >&2
  # A target directory of its own: the build scripts locate proto/ with
  # env!("CARGO_MANIFEST_DIR"), compiled in, so a shared one would reuse this
  # checkout's build scripts for the worktree's crates (a full build, ~30 min).
  (cd "$wt" && CARGO_TARGET_DIR="$PWD/../bench-base-target" cargo build --release -p taskwire --bin taskwire >&2)
  cp target/bench-base-target/release/taskwire target/taskwire-base
  git worktree remove --force "$wt"
  BASE_BIN=target/taskwire-base
fi
sync
DIR=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$DIR"' EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# run <binary> <get|send> <jsonrpc|grpc>: prints the server CPU µs per request
run() {
  local bin=$1 mode=$2 binding=$3 port
  port=$(free_port)
  rm -f "$DIR"/bench.db*
  local store=$STORE
  [ "$store" = sqlite ] && store="sqlite://$DIR/bench.db"
  TOKIO_WORKER_THREADS=1 taskset -c 0 "$bin" serve --listen "127.0.0.1:$port" \
    --store "$store" >"$DIR/serve.log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do
    curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
    sleep 0.1
  done
  taskset -c 1 "$LOAD" "http://127.0.0.1:$port" "$mode" "$binding" "$CONNS" "$SECS" "$pid" \
    >"$DIR/load.out"
  kill -INT "$pid"
  wait "$pid" 2>/dev/null || true
  local rps cpu
  rps=$(grep -o '= [0-9]* req/s' "$DIR/load.out" | grep -o '[0-9]*' || echo '?')
  cpu=$(grep -o 'server CPU: [0-9.]*' "$DIR/load.out" | grep -o '[0-9.]*$' || echo '?')
  echo "$cpu $rps"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

echo "| round | RPC | binding | base µs/req | new µs/req | base req/s | new req/s |"
echo "|---|---|---|---:|---:|---:|---:|"
for round in $(seq "$ROUNDS"); do
  for binding in jsonrpc grpc; do
    for mode in get send; do
      # Alternate which binary goes first, so drift does not favour one.
      if [ $((round % 2)) = 1 ]; then
        b=$(run "$BASE_BIN" "$mode" "$binding"); n=$(run "$NEW_BIN" "$mode" "$binding")
      else
        n=$(run "$NEW_BIN" "$mode" "$binding"); b=$(run "$BASE_BIN" "$mode" "$binding")
      fi
      echo "$mode $binding ${b% *} ${n% *}" >>"$DIR/results"
      echo "| $round | $mode | $binding | ${b% *} | ${n% *} | ${b#* } | ${n#* } |"
    done
  done
done
echo
echo "| RPC | binding | base median µs/req | new median µs/req | new / base |"
echo "|---|---|---:|---:|---:|"
for binding in jsonrpc grpc; do
  for mode in get send; do
    bm=$(awk -v m="$mode" -v b="$binding" '$1==m && $2==b {print $3}' "$DIR/results" | median)
    nm=$(awk -v m="$mode" -v b="$binding" '$1==m && $2==b {print $4}' "$DIR/results" | median)
    ratio=$(awk -v a="$bm" -v b="$nm" 'BEGIN { if (a > 0) printf "%.2f", b / a; else print "?" }')
    echo "| $mode | $binding | $bm | $nm | $ratio |"
  done
done
