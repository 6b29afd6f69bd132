#!/usr/bin/env bash
# Installs what the 2025-11-25 MCP bridge interop tests need: a Python
# virtualenv under target/mcp-legacy-venv with the official MCP SDK `mcp` at
# its newest 1.x (1.30.0, which speaks protocol revision 2025-11-25:
# initialize and Mcp-Session-Id sessions, elicitation/create on a POST's SSE
# answer, and the experimental tasks of SEP-1686 on its low-level server) and
# uvicorn, the ASGI server the target (conformance/targets/mcp_legacy_sdk_server.py)
# runs its Streamable HTTP app on. The 2.x SDK of .ci/setup-mcp-py.sh no longer
# speaks 2025-11-25, hence a venv of its own. Idempotent: a second run with the
# venv in place and the pinned versions installed does nothing.
#
# The tests (crates/taskwire/tests/bridge_mcp_legacy.rs, `#[ignore]`d) look for
# the python interpreter at $TASKWIRE_MCP_LEGACY_PY_PYTHON, else at
# target/mcp-legacy-venv/bin/python, and fail with a message when neither
# exists.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TASKWIRE_MCP_LEGACY_PY_VENV:-$ROOT/target/mcp-legacy-venv}"
MCP_SDK_VERSION="${MCP_LEGACY_SDK_VERSION:-1.30.0}"
# The SDK depends on uvicorn (>=0.31.1) but does not pin it; pin the one the
# target was checked with.
UVICORN_VERSION="${UVICORN_VERSION:-0.55.0}"
. "$ROOT/.ci/lib/venv.sh"
venv_setup setup-mcp-legacy-py "$VENV" \
  "mcp.server.fastmcp, mcp.server.experimental.task_context, uvicorn" \
  "mcp==$MCP_SDK_VERSION uvicorn==$UVICORN_VERSION" \
  "mcp==$MCP_SDK_VERSION" "uvicorn==$UVICORN_VERSION"
