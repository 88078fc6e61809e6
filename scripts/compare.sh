#!/usr/bin/env bash
# The main job: set up, run the quick comparison on this machine, build the report.
#
#   bash scripts/compare.sh                  # preset quick (this machine's default)
#   bash scripts/compare.sh --preset full    # extra arguments go to `hvd-vs-ddp run`
#   bash scripts/compare.sh --repeat 5       # more repetitions per cell (quick: 3)
#
# Results: runs/<time>-<preset>/ ; report: reports-out/<run name>/report.html (+ .md,
# verdicts.json)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${HVD_VS_DDP_VENV:-$ROOT/.venv}"
bash "$ROOT/scripts/setup.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PATH="$VENV/bin:$PATH"
cd "$ROOT"
set +e
run_dir="$("$VENV/bin/hvd-vs-ddp" run --allow-failures "$@" | tail -n 1)"
rc=$?
set -e
if [[ $rc -ne 0 || ! -f "$run_dir/manifest.json" ]]; then
    echo "compare: the run did not produce a run directory (exit $rc)" >&2
    exit 1
fi
out="$ROOT/reports-out/$(basename "$run_dir")/report.html"
"$VENV/bin/hvd-vs-ddp" report "$run_dir" -o "$out"
echo "compare: report: $out"
echo "compare: summary: ${out%.html}.md"
