#!/usr/bin/env bash
# Runs the examples the README points to, as a user would, against what they
# serve (built already by `cargo build --workspace --bins --examples`):
#  - custom_agent: prints where it listens (port 0 by default), then answers its
#    upper-cased echo over A2A JSON-RPC, MCP (the default skill `run`), AG-UI and
#    CAS, and lists the default skill on the agent card;
#  - embed_mcp (taskwire-mcp alone in an axum app of its own): its own route and
#    the agent's default tool over MCP;
#  - every_protocol (taskwire-client) against custom_agent: one call per protocol;
#  - a2a_smoke (taskwire-client) against `taskwire serve` (the scripted agent,
#    whose directives it drives).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=target/debug/examples
WORK=$(mktemp -d)
PID=
SERVE=
EMBED=
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null || true
  [ -n "$EMBED" ] && kill "$EMBED" 2>/dev/null || true
  [ -n "$SERVE" ] && kill "$SERVE" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "examples: $*" >&2; [ -f "$WORK/out" ] && cat "$WORK/out" >&2; exit 1; }

"$BIN/custom_agent" >"$WORK/out" 2>"$WORK/err" &
PID=$!
BASE=
for _ in $(seq 100); do
  BASE=$(sed -n 's/^listening on \(http:\/\/[0-9.:]*\)$/\1/p' "$WORK/out")
  [ -n "$BASE" ] && break
  sleep 0.1
done
[ -n "$BASE" ] || fail "custom_agent printed no 'listening on' line: $(cat "$WORK/err")"
echo "custom_agent: $BASE"

card=$(curl -fsS "$BASE/.well-known/agent-card.json")
echo "$card" | grep -q '"id":"run"' || fail "agent card has no default skill: $card"

a2a=$(curl -fsS "$BASE/a2a" -H 'A2A-Version: 1.0' -H 'Content-Type: application/json' -d '{
  "jsonrpc":"2.0","id":1,"method":"SendMessage",
  "params":{"message":{"messageId":"ex-1","role":"ROLE_USER","parts":[{"text":"hello a2a"}]}}}')
echo "$a2a" | grep -q 'HELLO A2A' || fail "A2A: $a2a"
echo "$a2a" | grep -q 'TASK_STATE_COMPLETED' || fail "A2A not completed: $a2a"

META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"ci","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}'
mcp=$(curl -fsS "$BASE/mcp" -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
  -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: run' \
  -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{'"$META"',"name":"run","arguments":{"text":"hello mcp"}}}')
echo "$mcp" | grep -q 'HELLO MCP' || fail "MCP: $mcp"

agui=$(curl -fsS -N --max-time 20 "$BASE/agui" -H 'Content-Type: application/json' -d '{
  "threadId":"t1","runId":"r1","messages":[{"id":"u1","role":"user","content":"hello ag-ui"}],
  "tools":[],"context":[],"state":{},"forwardedProps":{}}')
echo "$agui" | grep -q 'HELLO AG-UI' || fail "AG-UI: $agui"
echo "$agui" | grep -q 'RUN_FINISHED' || fail "AG-UI run not finished: $agui"

cas=$(curl -fsS "$BASE/cas/tasks" -H 'Content-Type: application/json' \
  -d '{"message":[{"mimeType":"text/plain","text":"hello cas"}]}')
id=$(echo "$cas" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
for _ in $(seq 50); do
  msgs=$(curl -fsS "$BASE/cas/tasks/$id/messages")
  echo "$msgs" | grep -q 'HELLO CAS' && break
  sleep 0.1
done
echo "$msgs" | grep -q 'HELLO CAS' || fail "CAS: $msgs"

every=$(timeout 60 "$BIN/every_protocol" "$BASE" 2>&1) || fail "every_protocol: $every"
for p in A2A MCP AG-UI CAS; do
  echo "$every" | grep -q "HELLO OVER $p" || fail "every_protocol: no answer over $p: $every"
done
echo "every_protocol: answered over A2A, MCP, AG-UI and CAS"

"$BIN/embed_mcp" >"$WORK/embed.out" 2>"$WORK/embed.err" &
EMBED=$!
EBASE=
for _ in $(seq 100); do
  EBASE=$(sed -n 's/^listening on \(http:\/\/[0-9.:]*\)$/\1/p' "$WORK/embed.out")
  [ -n "$EBASE" ] && break
  sleep 0.1
done
[ -n "$EBASE" ] || fail "embed_mcp printed no 'listening on' line: $(cat "$WORK/embed.err")"
own=$(curl -fsS "$EBASE/hello")
[ "$own" = "a route of your own" ] || fail "embed_mcp /hello: $own"
emcp=$(curl -fsS "$EBASE/mcp" -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
  -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: run' \
  -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{'"$META"',"name":"run","arguments":{"text":"hello embedded"}}}')
echo "$emcp" | grep -q 'HELLO EMBEDDED' || fail "embed_mcp MCP: $emcp"
echo "embed_mcp: $EBASE (own route and MCP)"

target/debug/taskwire serve --listen 127.0.0.1:0 --store memory:// >"$WORK/serve.out" 2>"$WORK/serve.err" &
SERVE=$!
ADDR=
for _ in $(seq 100); do
  ADDR=$(sed -n 's/^listening on \([0-9.:]*\)$/\1/p' "$WORK/serve.out")
  [ -n "$ADDR" ] && break
  sleep 0.1
done
[ -n "$ADDR" ] || fail "taskwire serve printed no 'listening on' line: $(cat "$WORK/serve.err")"
smoke=$(timeout 60 "$BIN/a2a_smoke" "http://$ADDR" 2>&1) || fail "a2a_smoke: $smoke"
echo "$smoke" | tail -n 3
echo "examples: custom_agent answered on A2A, MCP, AG-UI and CAS (curl and every_protocol); embed_mcp on its own route and MCP; a2a_smoke passed"
