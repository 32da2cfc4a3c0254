#!/usr/bin/env bash
# Run a command inside the golden-vector Python environment, creating it on first use.
#
#   scripts/golden/venv.sh python scripts/golden/metrics.py
#
# The venv lives in .venv-golden/ at the repository root (git-ignored) and is built from
# scripts/golden/requirements.txt (PyPI only; torch's default wheel runs on CPU).
# Set CALIBRA_GOLDEN_VENV to reuse an existing environment instead.
# CI never runs this: the golden vectors it produces are committed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${CALIBRA_GOLDEN_VENV:-$root/.venv-golden}"
req="$root/scripts/golden/requirements.txt"
if [ ! -x "$venv/bin/python" ]; then
  echo "creating golden-vector venv in $venv (first run downloads torch; several minutes)" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet -r "$req"
fi
export PATH="$venv/bin:$PATH"
cd "$root"
exec "$@"
