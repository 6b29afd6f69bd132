#!/usr/bin/env bash
# Installs what the A2A interop tests need: a Python virtualenv under
# target/a2a-interop-venv with the official `a2a-sdk` (extras grpc, http-server)
# at a 1.x version that speaks A2A 1.0, and `h2` (hyper-h2, the strict HTTP/2
# protocol library the HTTP/2 interop check drives). Idempotent: a second run
# with the venv in place and the pinned version installed does nothing.
#
# The interop tests (crates/taskwire-a2a/tests/interop.rs) look for the python
# interpreter at $TASKWIRE_A2A_PYTHON, else at target/a2a-interop-venv/bin/python,
# and skip with a message when neither exists.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TASKWIRE_A2A_VENV:-$ROOT/target/a2a-interop-venv}"
A2A_SDK_VERSION="${A2A_SDK_VERSION:-1.3.0}"
# a2a-sdk[http-server] brings Starlette but no ASGI server: the SDK server the
# conformance run and the bridge interop tests start (conformance/targets/
# a2a_sdk_server.py) runs on uvicorn.
UVICORN_VERSION="${UVICORN_VERSION:-0.54.0}"
. "$ROOT/.ci/lib/venv.sh"
venv_setup setup-a2a "$VENV" "a2a.client, grpc, h2, uvicorn" "a2a-sdk==$A2A_SDK_VERSION" \
  "a2a-sdk[grpc,http-server]==$A2A_SDK_VERSION" httpx "h2>=4.1,<5" "uvicorn==$UVICORN_VERSION"
