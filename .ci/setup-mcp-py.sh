#!/usr/bin/env bash
# Installs what the Python MCP SDK bridge interop tests need: a Python
# virtualenv under target/mcp-py-venv with the official MCP SDK `mcp` (2.x,
# which speaks protocol revision 2026-07-28: server/discover, single-exchange
# POSTs, SEP-2322 input_required results) and uvicorn, the ASGI server the SDK
# target (conformance/targets/mcp_sdk_server.py) runs its Streamable HTTP app on.
# Idempotent: a second run with the venv in place and the pinned versions
# installed does nothing.
#
# The tests (crates/taskwire/tests/bridge/sdk_mcp.rs) look for the python
# interpreter at $TASKWIRE_MCP_PY_PYTHON, else at target/mcp-py-venv/bin/python,
# and fail with a message when neither exists.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TASKWIRE_MCP_PY_VENV:-$ROOT/target/mcp-py-venv}"
MCP_SDK_VERSION="${MCP_SDK_VERSION:-2.3.0}"
# The SDK depends on uvicorn (>=0.31.1) but does not pin it; pin the one the
# target was checked with.
UVICORN_VERSION="${UVICORN_VERSION:-0.55.0}"
. "$ROOT/.ci/lib/venv.sh"
venv_setup setup-mcp-py "$VENV" "mcp.server.mcpserver, uvicorn" \
  "mcp==$MCP_SDK_VERSION uvicorn==$UVICORN_VERSION" \
  "mcp==$MCP_SDK_VERSION" "uvicorn==$UVICORN_VERSION"
