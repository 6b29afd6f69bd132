#!/usr/bin/env bash
# The bridge benchmark of issue #21 (item 8): what a bridge adds to a blocking
# request, in latency and in server CPU, against calling the upstream directly.
#
#   bench/bridge.sh                       # A2A→A2A and MCP→A2A, one round of 10 s runs
#   SECS=10 ROUNDS=3 bench/bridge.sh      # three rounds, direct and bridged alternating
#   QUIET=30 bench/bridge.sh              # after the build, wait until no rustc has run and
#                                         # the machine has been idle for 30 s (at most
#                                         # QUIET_MAX s, default 1800)
#   ONLY=mcp bench/bridge.sh              # one caller protocol only (a2a or mcp)
#   STORE=sqlite bench/bridge.sh          # both servers on their default store: a SQLite
#                                         # file each (synchronous=full), fresh every run;
#                                         # STORE=sqlite-normal: ?synchronous=normal
#   UPSCHEME=a2a+grpc bench/bridge.sh     # the bridge reaches its upstream over A2A gRPC
#                                         # (default a2a+http: JSON-RPC)
#
# The upstream is `taskwire serve --store memory://` (the scripted agent: plain
# text comes back as an artifact and the task completes). The bridge is another
# `taskwire serve --store memory:// --upstream a2a+http://…` in front of it.
# With STORE=sqlite each server stores its tasks in a SQLite file of its own,
# as `taskwire serve` does by default.
#
# - A2A→A2A: blocking JSON-RPC SendMessage, to the bridge / to the upstream.
# - MCP→A2A: blocking MCP tools/call of run_script (revision 2026-07-28, no tasks
#   extension), to the bridge (whose upstream is A2A) / to the upstream's own MCP
#   endpoint.
#
# Each is measured (a) direct: the upstream pinned to core 0 with one runtime
# worker; (b) bridged: the upstream and the bridge both on core 0 with one worker
# each. The load generator (bridge_load) is pinned to core 1. Two phases:
#
# - latency: concurrency LAT_CONC (1); added latency = bridged - direct (p50, p99);
# - CPU: concurrency CPU_CONC (16); CPU per request of the upstream in (a); of the
#   bridge, of the upstream and of both in (b). "Bridge CPU / direct" is the CPU
#   the bridge spends per task against the CPU of serving the task directly.
#
# "core 0 busy" is the servers' CPU per request × req/s: near 100% the servers
# are saturated; well below, the CPU per request includes going idle and waking
# up (bridge_load also prints its own CPU per request, to show whether it is what
# limits the rate).
#
# Targets: added p50 ≤ 1 ms; bridge CPU ≤ 2× direct. Every run starts fresh
# servers. Each round runs, per protocol and phase, direct then bridged. The
# summary gives every round and the median of the rounds, with PASS/MISS, and
# for each run the CPU the rest of the machine used meanwhile (in % of one core;
# a few % is the kernel and idle daemons, more is a disturbed run) and how many
# rustc processes ran when it started and ended.
#
# Needs `taskset` (util-linux), python3, curl and two cores. Builds the release
# binaries first and runs copies of them (so that a build in the same target dir
# during the run cannot change the binary between runs).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${SECS:-10}
ROUNDS=${ROUNDS:-1}
LAT_CONC=${LAT_CONC:-1}
CPU_CONC=${CPU_CONC:-16}
PROTOCOLS=${ONLY:-a2a mcp}
STORE=${STORE:-memory}
case "$STORE" in
  memory | sqlite | sqlite-normal) ;;
  *) echo "STORE is memory, sqlite or sqlite-normal" >&2; exit 2 ;;
esac
UPSCHEME=${UPSCHEME:-a2a+http}
case "$UPSCHEME" in
  a2a+http | a2a+grpc) ;;
  *) echo "UPSCHEME is a2a+http or a2a+grpc" >&2; exit 2 ;;
esac
cargo build --release -p taskwire -p taskwire-bench --bin taskwire --bin bridge_load >&2
TARGET=${CARGO_TARGET_DIR:-target}
DIR=$(mktemp -d)
cleanup() {
  local p
  for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cp "$TARGET/release/taskwire" "$TARGET/release/bridge_load" "$DIR/"
BIN=$DIR

# busy_ticks: the busy clock ticks of the whole machine (/proc/stat).
busy_ticks() {
  awk '/^cpu /{print $2+$3+$4+$7+$8+$9; exit}' /proc/stat
}
if [ -n "${QUIET:-}" ] && [ "${QUIET}" != 0 ]; then
  # Quiet: no rustc, and the machine as a whole below a quarter of a core,
  # for QUIET seconds in a row (checked every 5 s).
  limit=$(( $(date +%s) + ${QUIET_MAX:-1800} ))
  quiet_since=$(date +%s)
  hz=$(getconf CLK_TCK)
  before=$(busy_ticks)
  while :; do
    sleep 5
    now=$(date +%s)
    after=$(busy_ticks)
    if [ "$(pgrep -c rustc || true)" != 0 ] || [ $(( (after - before) * 100 / (5 * hz) )) -gt 25 ]; then
      quiet_since=$now
    fi
    before=$after
    if [ $(( now - quiet_since )) -ge "$QUIET" ]; then
      echo "# no rustc and an idle machine for ${QUIET} s: measuring ($(date -u +%H:%M:%S) UTC)" >&2
      break
    fi
    if [ "$now" -ge "$limit" ]; then
      echo "# WARNING: the machine was not quiet within ${QUIET_MAX:-1800} s: measuring anyway" >&2
      break
    fi
  done
fi
# Right after a build the kernel is still writing its output back to disk (see
# bench/a2a.sh): flush it first.
sync

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# serve <log> [upstream-url]: starts a server on core 0 with one runtime worker,
# waits until it is ready, and sets PORT and PID.
serve() {
  local log=$1 up=${2:-} store=memory://
  PORT=$(free_port)
  if [ "$STORE" != memory ]; then
    rm -f "$log.db" "$log.db-wal" "$log.db-shm"
    store="sqlite://$log.db"
    [ "$STORE" = sqlite-normal ] && store="$store?synchronous=normal"
  fi
  if [ -n "$up" ]; then
    TOKIO_WORKER_THREADS=1 taskset -c 0 "$BIN/taskwire" serve --listen "127.0.0.1:$PORT" \
      --store "$store" --upstream "$up" >"$log" 2>&1 &
  else
    TOKIO_WORKER_THREADS=1 taskset -c 0 "$BIN/taskwire" serve --listen "127.0.0.1:$PORT" \
      --store "$store" >"$log" 2>&1 &
  fi
  PID=$!
  for _ in $(seq 200); do
    curl -fs "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && return 0
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.05
  done
  echo "server on port $PORT did not become ready:" >&2
  cat "$log" >&2
  exit 1
}

stop() {
  local p
  for p in "$@"; do kill -INT "$p" 2>/dev/null || true; done
  for p in "$@"; do wait "$p" 2>/dev/null || true; done
}

# field <file> <line-prefix> <key>: the value of key=… on the line starting with prefix.
field() {
  grep "^$2" "$1" | head -n 1 | tr ' ' '\n' | sed -n "s/^$3=//p"
}

RESULTS=$DIR/results.tsv
: >"$RESULTS"
# run <round> <a2a|mcp> <direct|bridged> <lat|cpu>
run() {
  local round=$1 proto=$2 kind=$3 phase=$4
  local conc=$LAT_CONC
  [ "$phase" = cpu ] && conc=$CPU_CONC
  local out=$DIR/out.txt busy
  busy=$(pgrep -c rustc || true)
  serve "$DIR/upstream.log"
  local up_pid=$PID up_port=$PORT
  if [ "$kind" = bridged ]; then
    serve "$DIR/bridge.log" "$UPSCHEME://127.0.0.1:$up_port"
    local br_pid=$PID br_port=$PORT
    echo "## round $round / $proto / bridged / $phase (concurrency $conc; rustc running: $busy)"
    if ! taskset -c 1 "$BIN/bridge_load" "http://127.0.0.1:$br_port" "$proto" "$conc" "$SECS" \
      "$br_pid,$up_pid" >"$out"; then
      cat "$out"
      echo "--- bridge log:"; tail -n 50 "$DIR/bridge.log"
      echo "--- upstream log:"; tail -n 50 "$DIR/upstream.log"
      exit 1
    fi
    stop "$br_pid" "$up_pid"
  else
    echo "## round $round / $proto / direct / $phase (concurrency $conc; rustc running: $busy)"
    if ! taskset -c 1 "$BIN/bridge_load" "http://127.0.0.1:$up_port" "$proto" "$conc" "$SECS" \
      "$up_pid" >"$out"; then
      cat "$out"
      echo "--- upstream log:"; tail -n 50 "$DIR/upstream.log"
      exit 1
    fi
    stop "$up_pid"
  fi
  grep -v -e '^RESULT' -e '^CPU' "$out"
  local p50 p99 rps cpu_up cpu_br="-" cpu_sum others
  others=$(field "$out" RESULT others_pct)
  p50=$(field "$out" RESULT p50_us)
  p99=$(field "$out" RESULT p99_us)
  rps=$(field "$out" RESULT rps)
  cpu_sum=$(field "$out" CPU_SUM us_per_req)
  if [ "$kind" = bridged ]; then
    cpu_br=$(field "$out" "CPU pid=$br_pid " us_per_req)
  fi
  cpu_up=$(field "$out" "CPU pid=$up_pid " us_per_req)
  busy="$others% ($busy/$(pgrep -c rustc || true))"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$proto" "$kind" "$phase" \
    "$p50" "$p99" "$rps" "$cpu_up" "$cpu_br" "$cpu_sum" "$busy" >>"$RESULTS"
}

echo "# taskwire $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates Cargo.lock || echo ' (crates/ modified in the working tree)'), SECS=$SECS ROUNDS=$ROUNDS, $STORE store, upstream $UPSCHEME, latency at concurrency $LAT_CONC, CPU at $CPU_CONC"
for round in $(seq "$ROUNDS"); do
  for proto in $PROTOCOLS; do
    for phase in lat cpu; do
      run "$round" "$proto" direct "$phase"
      run "$round" "$proto" bridged "$phase"
    done
  done
done

python3 - "$RESULTS" "$ROUNDS" <<'PY'
import sys, statistics
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
rounds = int(sys.argv[2])
R = {}
for r in rows:
    rnd, proto, kind, phase, p50, p99, rps, up, br, tot, busy = r
    R[(int(rnd), proto, kind, phase)] = dict(
        p50=float(p50), p99=float(p99), rps=float(rps), up=float(up),
        br=None if br == "-" else float(br), sum=float(tot), busy=busy)
name = {"a2a": "A2A→A2A", "mcp": "MCP→A2A"}
verdict = lambda ok: "PASS" if ok else "MISS"
med = statistics.median
for proto in [p for p in ("a2a", "mcp") if any(k[1] == p for k in R)]:
    print(f"\n### {name[proto]}: latency at concurrency 1 (µs)\n")
    print("| round | direct p50 | direct p99 | bridged p50 | bridged p99 | added p50 | added p99 | target: added p50 ≤ 1000 µs | others' CPU (rustc at start/end) (d; b) |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---|")
    lines = []
    for rnd in range(1, rounds + 1):
        d, b = R[(rnd, proto, "direct", "lat")], R[(rnd, proto, "bridged", "lat")]
        lines.append((d["p50"], d["p99"], b["p50"], b["p99"]))
        print(f"| {rnd} | {d['p50']:.0f} | {d['p99']:.0f} | {b['p50']:.0f} | {b['p99']:.0f} | "
              f"{b['p50']-d['p50']:.0f} | {b['p99']-d['p99']:.0f} | {verdict(b['p50']-d['p50'] <= 1000)} | {d['busy']}; {b['busy']} |")
    if rounds > 1:
        m = [med(x[i] for x in lines) for i in range(4)]
        print(f"| median | {m[0]:.0f} | {m[1]:.0f} | {m[2]:.0f} | {m[3]:.0f} | {m[2]-m[0]:.0f} | {m[3]-m[1]:.0f} | {verdict(m[2]-m[0] <= 1000)} | |")
    print(f"\n### {name[proto]}: server CPU per request at concurrency 16 (µs)\n")
    print("| round | direct: upstream | direct req/s | bridged: bridge | bridged: upstream | bridged: sum | bridged req/s | bridge / direct | sum / direct | target: bridge ≤ 2× direct | core 0 busy (d; b) | others' CPU (rustc at start/end) (d; b) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|")
    lines = []
    for rnd in range(1, rounds + 1):
        d, b = R[(rnd, proto, "direct", "cpu")], R[(rnd, proto, "bridged", "cpu")]
        ratio, sratio = b["br"] / d["up"], b["sum"] / d["up"]
        lines.append((d["up"], d["rps"], b["br"], b["up"], b["sum"], b["rps"]))
        print(f"| {rnd} | {d['up']:.1f} | {d['rps']:.0f} | {b['br']:.1f} | {b['up']:.1f} | {b['sum']:.1f} | {b['rps']:.0f} | "
              f"{ratio:.2f}× | {sratio:.2f}× | {verdict(ratio <= 2)} | "
              f"{d['sum']*d['rps']/1e4:.0f}%; {b['sum']*b['rps']/1e4:.0f}% | {d['busy']}; {b['busy']} |")
    if rounds > 1:
        m = [med(x[i] for x in lines) for i in range(6)]
        print(f"| median | {m[0]:.1f} | {m[1]:.0f} | {m[2]:.1f} | {m[3]:.1f} | {m[4]:.1f} | {m[5]:.0f} | "
              f"{m[2]/m[0]:.2f}× | {m[4]/m[0]:.2f}× | {verdict(m[2]/m[0] <= 2)} | | |")
PY
