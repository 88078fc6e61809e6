#!/usr/bin/env bash
# The main job: set up, run the quick comparison on this machine, build the report.
#
#   bash scripts/compare.sh                  # preset quick (this machine's default)
#   bash scripts/compare.sh --preset full    # extra arguments go to `hvd-vs-ddp run`
#   bash scripts/compare.sh --repeat 5       # more repetitions per cell (quick: 3)
#   HVD_VS_DDP_MINUTES=10 bash scripts/compare.sh   # the whole job's time (default 8)
#   bash scripts/compare.sh --budget 0.1     # (almost) no added repetitions: the fixed design
#
# After its planned repetitions the run adds interleaved repetitions to the pairs whose
# verdicts are still inconclusive (`run --budget`, docs/methodology.md "Settling within
# a budget"), within the minutes left of HVD_VS_DDP_MINUTES after the set-up (less 0.5
# for the report, at least 2); the report says which pairs, if any, the budget left open.
#
# Results: runs/<time>-<preset>/ ; report: reports-out/<run name>/report.html (+ .md,
# verdicts.json)
set -euo pipefail
start=$SECONDS
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${HVD_VS_DDP_VENV:-$ROOT/.venv}"
bash "$ROOT/scripts/setup.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PATH="$VENV/bin:$PATH"
cd "$ROOT"
budget=()
if [[ " $* " != *" --budget "* && " $* " != *" --budget="* ]]; then
    budget=(--budget "$(awk -v t="${HVD_VS_DDP_MINUTES:-8}" -v s=$((SECONDS - start)) \
        'BEGIN { b = t - s / 60 - 0.5; if (b < 2) b = 2; printf "%.1f", b }')")
    echo "compare: set-up took $((SECONDS - start)) s; run budget ${budget[1]} min" >&2
fi
set +e
run_dir="$("$VENV/bin/hvd-vs-ddp" run --allow-failures "${budget[@]}" "$@" | tail -n 1)"
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
echo "compare: $((SECONDS - start)) s in all"
