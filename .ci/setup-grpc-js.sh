#!/usr/bin/env bash
# Installs what the grpc-js interop test needs: the official Node.js gRPC client
# `@grpc/grpc-js` (over Node's HTTP/2, nghttp2) and `@grpc/proto-loader`, into
# target/grpc-js-interop/node_modules. Idempotent: a second run with both present
# does nothing.
#
# The test (crates/taskwire/tests/interop.rs) looks for them at
# $TASKWIRE_GRPC_JS_DIR (default: <workspace>/target/grpc-js-interop) and skips,
# saying why, when they or `node` are missing.
set -euo pipefail

cd "$(dirname "$0")/.."
DIR="${TASKWIRE_GRPC_JS_DIR:-$PWD/target/grpc-js-interop}"
GRPC_JS="@grpc/grpc-js@1.14"
PROTO_LOADER="@grpc/proto-loader@0.8"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "setup-grpc-js: node/npm not found; the grpc-js interop test will be skipped" >&2
    exit 0
fi

if [ -f "$DIR/node_modules/@grpc/grpc-js/package.json" ] &&
   [ -f "$DIR/node_modules/@grpc/proto-loader/package.json" ]; then
    echo "setup-grpc-js: already in $DIR ($(node -p "require('$DIR/node_modules/@grpc/grpc-js/package.json').version"))"
    exit 0
fi

mkdir -p "$DIR"
if [ ! -f "$DIR/package.json" ]; then
    printf '{\n  "name": "taskwire-grpc-js-interop",\n  "private": true\n}\n' > "$DIR/package.json"
fi
echo "setup-grpc-js: npm install $GRPC_JS $PROTO_LOADER into $DIR"
npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error "$GRPC_JS" "$PROTO_LOADER"
echo "setup-grpc-js: installed $(node -p "require('$DIR/node_modules/@grpc/grpc-js/package.json').version")"
