#!/usr/bin/env bash
# Installs what the Python MCP SDK bridge interop tests need: a Python
# virtualenv under target/mcp-py-venv with the official MCP SDK `mcp` (2.x,
# which speaks protocol revision 2026-07-28: server/discover, single-exchange
# POSTs, SEP-2322 input_required results) and uvicorn, the ASGI server the SDK
# target (conformance/targets/mcp_sdk_server.py) runs its Streamable HTTP app on.
# Idempotent: a second run with the venv in place and the pinned versions
# installed does nothing.
#
# The tests (crates/taskwire/tests/bridge_mcp_sdk.rs) look for the python
# interpreter at $TASKWIRE_MCP_PY_PYTHON, else at target/mcp-py-venv/bin/python,
# and fail with a message when neither exists.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TASKWIRE_MCP_PY_VENV:-$ROOT/target/mcp-py-venv}"
MCP_SDK_VERSION="${MCP_SDK_VERSION:-2.3.0}"
# The SDK depends on uvicorn (>=0.31.1) but does not pin it; pin the one the
# target was checked with.
UVICORN_VERSION="${UVICORN_VERSION:-0.55.0}"
PYTHON="${PYTHON:-python3}"

if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" - "$MCP_SDK_VERSION" "$UVICORN_VERSION" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
assert version("mcp") == sys.argv[1]
assert version("uvicorn") == sys.argv[2]
import mcp.server.mcpserver, uvicorn  # noqa: F401
PY
then
  echo "setup-mcp-py: mcp $MCP_SDK_VERSION and uvicorn $UVICORN_VERSION already installed in $VENV"
  exit 0
fi

echo "setup-mcp-py: creating $VENV with mcp==$MCP_SDK_VERSION uvicorn==$UVICORN_VERSION"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet "mcp==$MCP_SDK_VERSION" "uvicorn==$UVICORN_VERSION"
"$VENV/bin/python" -c 'import mcp.server.mcpserver, uvicorn; from importlib.metadata import version; print("setup-mcp-py: mcp", version("mcp"), "uvicorn", version("uvicorn"))'
