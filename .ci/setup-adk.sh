#!/usr/bin/env bash
# Installs what the Google ADK interop test needs: a Python virtualenv under
# target/adk-interop-venv with `google-adk` (extra `a2a`, which brings the
# official `a2a-sdk` it is built on) at the version whose RemoteA2aAgent
# loaded taskwire's card badly (issue 42). Idempotent: a second run with the
# venv in place and the pinned version installed does nothing.
#
# The test (crates/taskwire/tests/adk.rs) looks for the interpreter at
# $TASKWIRE_ADK_PYTHON, else at target/adk-interop-venv/bin/python.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${TASKWIRE_ADK_VENV:-$ROOT/target/adk-interop-venv}"
ADK_VERSION="${ADK_VERSION:-2.13.0}"
. "$ROOT/.ci/lib/venv.sh"
venv_setup setup-adk "$VENV" "google.adk.agents.remote_a2a_agent, a2a.client" \
  "google-adk==$ADK_VERSION" "google-adk[a2a]==$ADK_VERSION"
