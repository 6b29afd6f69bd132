# Sourced by the .ci/setup-*.sh scripts that install a Python SDK (setup-a2a,
# setup-mcp-py, setup-mcp-py-2025-11-25): one way to make, check and reuse a
# virtualenv. Not run on its own (it lives under lib/, outside the
# .ci/setup-*.sh that .ci/test runs).
#
# venv_setup NAME VENV IMPORTS PINS PACKAGE...
#   NAME     what its messages start with (`setup-a2a`)
#   VENV     the virtualenv's directory
#   IMPORTS  what must import, as a Python `import` takes it (`a2a.client, grpc`)
#   PINS     the distributions that must be installed at a version, each
#            `dist==version`, separated by spaces
#   PACKAGE  what pip installs (requirements)
# Idempotent: with VENV's python importing IMPORTS and holding PINS it does
# nothing; else it makes VENV with $PYTHON (default python3), upgrades pip,
# installs the PACKAGEs, and checks IMPORTS and PINS again (failing if they
# do not hold), printing the versions.

venv_check() { # PYTHON IMPORTS PINS: prints the pinned versions, fails unless all hold
  "$1" - "$2" "$3" <<'PY'
import sys
from importlib.metadata import version

imports, pins = sys.argv[1], sys.argv[2].split()
for pin in pins:
    dist, want = pin.split("==")
    have = version(dist)
    assert have == want, f"{dist} {have} is installed, not {want}"
exec(f"import {imports}")
print(", ".join(" ".join(pin.split("==")) for pin in pins))
PY
}

venv_setup() {
  local name="$1" venv="$2" imports="$3" pins="$4"
  shift 4
  local have
  if [ -x "$venv/bin/python" ] && have="$(venv_check "$venv/bin/python" "$imports" "$pins" 2>/dev/null)"; then
    echo "$name: $have already installed in $venv"
    return 0
  fi
  echo "$name: creating $venv with $*"
  "${PYTHON:-python3}" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
  "$venv/bin/python" -m pip install --quiet "$@"
  have="$(venv_check "$venv/bin/python" "$imports" "$pins")"
  echo "$name: $have"
}
