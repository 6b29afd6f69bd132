#!/usr/bin/env bash
# Installs what the 2025-11-25 MCP bridge interop tests need: a Python
# virtualenv under target/mcp-py-2025-11-25-venv with the official MCP SDK `mcp` at
# its newest 1.x (1.30.0, which speaks protocol revision 2025-11-25:
# initialize and Mcp-Session-Id sessions, elicitation/create on a POST's SSE
# answer, and the experimental tasks of SEP-1686 on its low-level server) and
# uvicorn, the ASGI server the target (conformance/targets/mcp_sdk_server_2025_11_25.py)
# runs its Streamable HTTP app on. The 2.x SDK of .ci/setup-mcp-py.sh no longer
# speaks 2025-11-25, hence a venv of its own. Idempotent: a second run with the
# venv in place and the pinned versions installed does nothing.
#
# The tests (crates/taskwire/tests/bridge/sdk_mcp_2025_11_25.rs, `#[ignore]`d) look for
# the python interpreter at $TASKWIRE_MCP_PY_2025_11_25_PYTHON, else at
# target/mcp-py-2025-11-25-venv/bin/python, and fail with a message when neither
# exists.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TASKWIRE_MCP_PY_2025_11_25_VENV:-$ROOT/target/mcp-py-2025-11-25-venv}"
MCP_SDK_VERSION="${MCP_SDK_VERSION_2025_11_25:-1.30.0}"
# The SDK depends on uvicorn (>=0.31.1) but does not pin it; pin the one the
# target was checked with.
UVICORN_VERSION="${UVICORN_VERSION:-0.55.0}"
. "$ROOT/.ci/lib/venv.sh"
venv_setup setup-mcp-py-2025-11-25 "$VENV" \
  "mcp.server.fastmcp, mcp.server.experimental.task_context, uvicorn" \
  "mcp==$MCP_SDK_VERSION uvicorn==$UVICORN_VERSION" \
  "mcp==$MCP_SDK_VERSION" "uvicorn==$UVICORN_VERSION"
