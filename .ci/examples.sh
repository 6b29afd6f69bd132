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
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() { echo "examples: $*" >&2; [ -f "$WORK/custom_agent.out" ] && cat "$WORK/custom_agent.out" >&2; exit 1; }

# start VAR NAME COMMAND...: runs COMMAND in the background (stopped on exit) and
# sets VAR to http://ADDR from its "listening on ADDR" line (ADDR with or without
# http://). Not called in a subshell, so that the process is remembered.
start() {
  local var=$1 name=$2 addr=
  shift 2
  "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
  PIDS+=($!)
  for _ in $(seq 100); do
    addr=$(sed -n 's/^listening on \(http:\/\/\)\{0,1\}\([0-9.:]*\)$/\2/p' "$WORK/$name.out")
    [ -n "$addr" ] && break
    sleep 0.1
  done
  [ -n "$addr" ] || fail "$name printed no 'listening on' line: $(cat "$WORK/$name.err")"
  printf -v "$var" 'http://%s' "$addr"
}

META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"ci","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}'
# mcp_run BASE TEXT: tools/call of the default tool `run` (revision 2026-07-28).
mcp_run() {
  curl -fsS "$1/mcp" -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: run' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{'"$META"',"name":"run","arguments":{"text":"'"$2"'"}}}'
}

start BASE custom_agent "$BIN/custom_agent"
echo "custom_agent: $BASE"

card=$(curl -fsS "$BASE/.well-known/agent-card.json")
echo "$card" | grep -q '"id":"run"' || fail "agent card has no default skill: $card"

a2a=$(curl -fsS "$BASE/a2a" -H 'A2A-Version: 1.0' -H 'Content-Type: application/json' -d '{
  "jsonrpc":"2.0","id":1,"method":"SendMessage",
  "params":{"message":{"messageId":"ex-1","role":"ROLE_USER","parts":[{"text":"hello a2a"}]}}}')
echo "$a2a" | grep -q 'HELLO A2A' || fail "A2A: $a2a"
echo "$a2a" | grep -q 'TASK_STATE_COMPLETED' || fail "A2A not completed: $a2a"

mcp=$(mcp_run "$BASE" "hello mcp")
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

start EBASE embed_mcp "$BIN/embed_mcp"
own=$(curl -fsS "$EBASE/hello")
[ "$own" = "a route of your own" ] || fail "embed_mcp /hello: $own"
emcp=$(mcp_run "$EBASE" "hello embedded")
echo "$emcp" | grep -q 'HELLO EMBEDDED' || fail "embed_mcp MCP: $emcp"
echo "embed_mcp: $EBASE (own route and MCP)"

start SERVE serve target/debug/taskwire serve --listen 127.0.0.1:0 --store memory://
smoke=$(timeout 60 "$BIN/a2a_smoke" "$SERVE" 2>&1) || fail "a2a_smoke: $smoke"
echo "$smoke" | tail -n 3
echo "examples: custom_agent answered on A2A, MCP, AG-UI and CAS (curl and every_protocol); embed_mcp on its own route and MCP; a2a_smoke passed"
