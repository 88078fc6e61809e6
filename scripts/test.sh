#!/usr/bin/env bash
# The test command: set up (scripts/setup.sh, idempotent), Slurm's daemons in CI or
# with HVD_VS_DDP_TEST_SLURM=1, Open MPI 5's and MPICH's launchers (scripts/install_mpis.sh),
# the static checks (scripts/lint.sh: ruff, mypy, hadolint), then the unit tests
# (tests/unit) and the real multi-process tests (tests/system) on the CPU.
#
#   bash scripts/test.sh                 # everything
#   bash scripts/test.sh -k faults       # extra arguments go to pytest
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${HVD_VS_DDP_VENV:-$ROOT/.venv}"
bash "$ROOT/scripts/setup.sh"
# tests/system/test_slurm.py runs a private one-node Slurm cluster. Slurm's daemons are a test
# tool, not something the project needs: installed only in CI or when asked for.
if [[ -n "${CI:-}" || "${HVD_VS_DDP_TEST_SLURM:-}" == 1 ]] && ! command -v slurmd >/dev/null 2>&1; then
    if [[ $(id -u) -eq 0 ]]; then
        echo "test: installing Slurm (slurmctld, slurmd, slurm-client) for tests/system/test_slurm.py"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client >/dev/null
    else
        echo "test: not root, so no Slurm for tests/system/test_slurm.py (it will skip)" >&2
    fi
fi
# tests/unit/test_k8s_manifests.py lints deploy/slurm/compare.sbatch and the scripts with
# the shellcheck linter (a Debian package, like Slurm: a test tool, installed only in CI
# or when asked).
if [[ -n "${CI:-}" || "${HVD_VS_DDP_TEST_SHELLCHECK:-}" == 1 ]] && ! command -v shellcheck >/dev/null 2>&1; then
    if [[ $(id -u) -eq 0 ]]; then
        echo "test: installing shellcheck for tests/unit/test_k8s_manifests.py"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends shellcheck >/dev/null
    else
        echo "test: not root, so no shellcheck (its tests will skip)" >&2
    fi
fi
# tests/system/test_dead_rank.py also kills ranks under Open MPI 5's mpirun and MPICH's
# mpiexec: their PyPI wheels, each in a virtualenv of its own under ~/.cache/hvd-vs-ddp/mpi
# (seconds; never fails: without them those tests skip, saying why).
bash "$ROOT/scripts/install_mpis.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PATH="$VENV/bin:$PATH"
bash "$ROOT/scripts/lint.sh"  # ruff, mypy, hadolint
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
