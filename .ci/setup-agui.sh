#!/usr/bin/env bash
# Installs what the AG-UI interop test needs: the official TypeScript packages
# @ag-ui/client, @ag-ui/core and @ag-ui/proto (1.x) from npm into
# target/agui-interop/node_modules. Idempotent: with the pinned versions already
# installed it does nothing.
#
# The interop test (crates/taskwire-agui/tests/interop.rs) runs
# crates/taskwire-agui/interop/interop.mjs with node against a served adapter. It
# looks for the install at $TASKWIRE_AGUI_NODE_DIR, else target/agui-interop, and
# skips with a message when it (or node) is missing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${TASKWIRE_AGUI_NODE_DIR:-$ROOT/target/agui-interop}"
AGUI_VERSION="${AGUI_VERSION:-1.0.0}"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "setup-agui: node and npm are required" >&2
  exit 1
fi

installed() {
  node -e '
    const v = process.argv[1];
    for (const p of ["client", "core", "proto"]) {
      const j = require(process.argv[2] + "/node_modules/@ag-ui/" + p + "/package.json");
      if (j.version !== v) process.exit(1);
    }' "$AGUI_VERSION" "$DIR" 2>/dev/null
}

if installed; then
  echo "setup-agui: @ag-ui/{client,core,proto}@$AGUI_VERSION already installed in $DIR"
  exit 0
fi

echo "setup-agui: installing @ag-ui/{client,core,proto}@$AGUI_VERSION into $DIR"
mkdir -p "$DIR"
if [ ! -f "$DIR/package.json" ]; then
  printf '{"name":"taskwire-agui-interop","private":true,"type":"module"}\n' > "$DIR/package.json"
fi
(cd "$DIR" && npm install --no-audit --no-fund --silent \
  "@ag-ui/client@$AGUI_VERSION" "@ag-ui/core@$AGUI_VERSION" "@ag-ui/proto@$AGUI_VERSION")
installed || { echo "setup-agui: install did not produce the pinned versions" >&2; exit 1; }
echo "setup-agui: done"
