#!/usr/bin/env bash
# The one prepared GPU check (scripts/gpu_check.py says what each line is): set-up, then
# every GPU line of the project, one table. On a machine without a GPU every line skips,
# saying why (exit 0); a line that could run and failed makes the exit 1.
#
#   bash scripts/gpu_check.sh                                  # set-up (scripts/setup.sh) first
#   bash scripts/gpu_check.sh --horovod-benchmark PATH/pytorch_synthetic_benchmark.py --out DIR
#   HVD_VS_DDP_SETUP=0 PYTHON=python3 bash scripts/gpu_check.sh  # an environment kept by hand
#                                                              # (a machine with no package index)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ "${HVD_VS_DDP_SETUP:-1}" != 0 ]]; then
    bash "$ROOT/scripts/setup.sh"
    PY="${HVD_VS_DDP_VENV:-$ROOT/.venv}/bin/python"
else
    PY="${PYTHON:-python3}"
fi
if [[ $(id -u) -eq 0 ]]; then  # Open MPI refuses root without these (horovodrun --mpi, mpirun)
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export PYTHONUNBUFFERED=1
exec "$PY" "$ROOT/scripts/gpu_check.py" "$@"
