#!/usr/bin/env bash
# The CPU cost of a JWT access token against a token-file token (issue 41):
# instructions per GetTask of `taskwire serve` under callgrind
# (bench/callgrind.sh's method and load generator), over JSON-RPC and gRPC, with
#   1. a token-file token (--auth-tokens),
#   2. a JWT access token of an OpenID provider (--oauth-issuer; the npm
#      package oidc-provider on loopback, ES256, its key cached after the first
#      request: no network on the request path),
# and the ratio (the target is at most 1.15).
#
#   bench/callgrind-auth.sh            # both bindings
#   SECS=5 bench/callgrind-auth.sh jsonrpc
#
# Needs valgrind, taskset, node and .ci/setup-oidc-provider.sh's install; builds
# the release binaries as bench/callgrind.sh does (unless NO_BUILD is set).
set -euo pipefail
cd "$(dirname "$0")/.."
BINDINGS=${1:-jsonrpc grpc}
TARGET=${CARGO_TARGET_DIR:-target}
OIDC_DIR=${TASKWIRE_OIDC_PROVIDER_DIR:-$PWD/target/oidc-provider}
if [ -z "${NO_BUILD:-}" ]; then
  cargo build --release -p taskwire -p taskwire-bench --bin taskwire --bin a2a_load >&2
fi
bash .ci/setup-oidc-provider.sh >&2
BIN=${BIN:-$TARGET/release/taskwire}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

# The issuer; the audience is a name the load generator never dials.
AUD=http://taskwire.bench
OIDC_PROVIDER_DIR=$OIDC_DIR RESOURCE=$AUD node crates/taskwire/tests/oidc/provider.mjs \
  >"$work/issuer.json" 2>"$work/issuer.log" &
for _ in $(seq 100); do [ -s "$work/issuer.json" ] && break; sleep 0.1; done
issuer=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["issuer"])' "$work/issuer.json")
# A fresh token per run (they live 300 s).
jwt() {
  curl -fs -u svc:svc-secret -d grant_type=client_credentials \
    -d 'scope=tasks:read tasks:write' -d "resource=$AUD" "$issuer/token" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])'
}
# A token-file token of the same length class as a typical opaque token.
echo "0f3c9a7e5b2d4c1f8e6a9b0d2c4e6f81 svc" >"$work/tokens"

per_request() {
  awk '/per request:/ {print $NF}'
}
for binding in $BINDINGS; do
  file=$(SERVE_FLAGS="--auth-tokens $work/tokens" A2A_LOAD_TOKEN=0f3c9a7e5b2d4c1f8e6a9b0d2c4e6f81 \
    NO_BUILD=1 BIN="$BIN" bash bench/callgrind.sh get "$binding" | per_request)
  oauth=$(SERVE_FLAGS="--oauth-issuer $issuer --oauth-audience $AUD" A2A_LOAD_TOKEN="$(jwt)" \
    NO_BUILD=1 BIN="$BIN" bash bench/callgrind.sh get "$binding" | per_request)
  ratio=$(python3 -c "print(f'{$oauth / $file:.3f}')")
  echo "GetTask $binding: token file $file, JWT $oauth instructions per request: ratio $ratio"
done
