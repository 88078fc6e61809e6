#!/usr/bin/env bash
# The test command: set up (scripts/setup.sh, idempotent), lint the Dockerfile if
# there is one, then run the unit and real multi-process tests on the CPU.
#
#   bash scripts/test.sh                 # everything
#   bash scripts/test.sh -k faults       # extra arguments go to pytest
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${HVD_VS_DDP_VENV:-$ROOT/.venv}"
bash "$ROOT/scripts/setup.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PATH="$VENV/bin:$PATH"
if [[ -f "$ROOT/Dockerfile" ]]; then
    echo "test: hadolint Dockerfile"
    "$VENV/bin/hadolint" "$ROOT/Dockerfile"
fi
cd "$ROOT"
set +e
"$VENV/bin/python" -m pytest tests/ -p no:cacheprovider -ra "$@"
rc=$?
set -e
if [[ $rc -eq 5 ]]; then
    echo "test: pytest ran no test; that is a failure here" >&2
    exit 1
fi
exit $rc
