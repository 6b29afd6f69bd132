#!/usr/bin/env bash
# Installs what the OAuth interop tests need: the npm package `oidc-provider`
# (OpenID Certified; 9.x runs on Node 20.19+ and 22) into
# target/oidc-provider/node_modules. Idempotent: with the pinned version already
# installed it does nothing.
#
# The tests (crates/taskwire/tests/oauth.rs) run
# crates/taskwire/tests/oidc/provider.mjs with node on loopback: an issuer of
# JWT access tokens for taskwire's resource indicator (RFC 8707), by the client
# credentials grant. They look for the install at $TASKWIRE_OIDC_PROVIDER_DIR,
# else target/oidc-provider, and fail with a message when it (or node) is
# missing.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${TASKWIRE_OIDC_PROVIDER_DIR:-$ROOT/target/oidc-provider}"
OIDC_PROVIDER_VERSION="${OIDC_PROVIDER_VERSION:-9.13.3}"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "setup-oidc-provider: node and npm are required" >&2
  exit 1
fi

installed() {
  node -e '
    const j = require(process.argv[2] + "/node_modules/oidc-provider/package.json");
    if (j.version !== process.argv[1]) process.exit(1);' "$OIDC_PROVIDER_VERSION" "$DIR" 2>/dev/null
}

if installed; then
  echo "setup-oidc-provider: oidc-provider@$OIDC_PROVIDER_VERSION already installed in $DIR"
  exit 0
fi

echo "setup-oidc-provider: installing oidc-provider@$OIDC_PROVIDER_VERSION into $DIR"
mkdir -p "$DIR"
if [ ! -f "$DIR/package.json" ]; then
  printf '{"name":"taskwire-oidc-provider","private":true,"type":"module"}\n' > "$DIR/package.json"
fi
(cd "$DIR" && npm install --no-audit --no-fund --silent "oidc-provider@$OIDC_PROVIDER_VERSION")
installed || { echo "setup-oidc-provider: install did not produce the pinned version" >&2; exit 1; }
echo "setup-oidc-provider: done"
