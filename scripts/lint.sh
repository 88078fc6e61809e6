#!/usr/bin/env bash
# The project's static checks: ruff (lint + import order), mypy (types), hadolint
# (Dockerfile). Run by scripts/test.sh before the tests and by `tox -e lint`.
#
#   bash scripts/lint.sh          # needs the .venv made by scripts/setup.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${HVD_VS_DDP_VENV:-$ROOT/.venv}"
cd "$ROOT"
echo "lint: ruff check"
"$VENV/bin/ruff" check .
echo "lint: mypy"
"$VENV/bin/mypy"
if [[ -f Dockerfile ]]; then
    echo "lint: hadolint Dockerfile"
    "$VENV/bin/hadolint" Dockerfile
fi
