#!/usr/bin/env bash
# Installs what the MCP adapter's interop tests need: the official TypeScript SDK
# `@modelcontextprotocol/sdk` 1.x (client side of the 2025-11-25 task generation)
# into target/mcp-interop/node_modules. Idempotent: a second run with the SDK
# present does nothing. The Rust interop client (rmcp 3.x) is a cargo
# dev-dependency and needs nothing here.
#
# The interop test crates/taskwire-mcp/tests/interop_ts.rs looks for the SDK at
# $TASKWIRE_MCP_TS_SDK_DIR (default: <workspace>/target/mcp-interop) and skips,
# saying why, when it or `node` is missing.
set -euo pipefail

cd "$(dirname "$0")/.."
DIR="${TASKWIRE_MCP_TS_SDK_DIR:-$PWD/target/mcp-interop}"
SDK_RANGE="^1"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "setup-mcp: node/npm not found; installing nodejs and npm from Debian"
    if command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
    else
        echo "setup-mcp: no apt-get; the TypeScript interop test will be skipped" >&2
        exit 0
    fi
fi

if [ -f "$DIR/node_modules/@modelcontextprotocol/sdk/package.json" ]; then
    echo "setup-mcp: @modelcontextprotocol/sdk already in $DIR ($(node -p "require('$DIR/node_modules/@modelcontextprotocol/sdk/package.json').version"))"
    exit 0
fi

mkdir -p "$DIR"
if [ ! -f "$DIR/package.json" ]; then
    printf '{\n  "name": "taskwire-mcp-interop",\n  "private": true,\n  "type": "module"\n}\n' > "$DIR/package.json"
fi
echo "setup-mcp: npm install @modelcontextprotocol/sdk@$SDK_RANGE into $DIR"
npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error "@modelcontextprotocol/sdk@$SDK_RANGE"
echo "setup-mcp: installed $(node -p "require('$DIR/node_modules/@modelcontextprotocol/sdk/package.json').version")"
