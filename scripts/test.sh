#!/usr/bin/env bash
# The test command: set up (scripts/setup.sh, idempotent), Slurm's daemons in CI or
# with HVD_VS_DDP_TEST_SLURM=1, Open MPI 5's and MPICH's launchers (scripts/install_mpis.sh),
# the static checks (scripts/lint.sh: ruff, mypy, hadolint), then the unit tests
# (tests/unit, on every core) first, so that a broken build fails in a few minutes, and
# only when they pass the real multi-process tests (tests/system) on the CPU: two at a
# time (pytest-xdist; tests/system/conftest.py says which share a worker). No test asserts
# a speed, a ratio or a duration from one run: such measurements are benchmarks
# (benchmarks/README.md). The system tests marked `extended`
# (Slurm, tox, two hosts, long end-to-end flows: tests/system/conftest.py lists why) are
# left out of the default, which must stay within 9 minutes here; `--extended` runs them
# alone and .ci/run runs both, one after the other.
#
#   bash scripts/test.sh                 # the README's test command (CI runs it first)
#   bash scripts/test.sh --extended      # the extended system tests alone (CI runs it next)
#   bash scripts/test.sh --all           # everything: lint, unit, every system test
#   bash scripts/test.sh --quick         # developers: lint, the unit tests, and one real
#                                        # launch per launcher (pytest -m quick: the suites
#                                        # under each launcher, the mutation job, spawn)
#   bash scripts/test.sh -k faults       # extra arguments go to pytest (both phases)
#   HVD_VS_DDP_SETUP=0 HVD_VS_DDP_VENV=DIR bash scripts/test.sh   # a virtualenv kept by
#                                        # hand: no set-up, no installs (lint and tests only)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${HVD_VS_DDP_VENV:-$ROOT/.venv}"
QUICK=0
TIER=core  # the system tests run: core (default), extended or all
case "${1:-}" in
    --quick) QUICK=1; shift ;;
    --extended) TIER=extended; shift ;;
    --all) TIER=all; shift ;;
esac
SETUP="${HVD_VS_DDP_SETUP:-1}"
if [[ "$SETUP" != 0 ]]; then
    bash "$ROOT/scripts/setup.sh"
fi
# test_tool COMMAND TESTS PACKAGE...: a Debian package some tests need, a test tool rather
# than something the project needs (installed only in CI or when asked for), installed
# when COMMAND is missing and this is root; otherwise those tests skip, saying why.
test_tool() {
    local cmd=$1 tests=$2
    shift 2
    command -v "$cmd" >/dev/null 2>&1 && return 0
    if [[ $(id -u) -eq 0 ]]; then
        echo "test: installing $* for $tests"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "$@" >/dev/null
    else
        echo "test: not root, so no $* for $tests (they will skip)" >&2
    fi
}
# tests/system/test_slurm.py runs a private one-node Slurm cluster.
if [[ "$SETUP" != 0 ]] && [[ -n "${CI:-}" || "${HVD_VS_DDP_TEST_SLURM:-}" == 1 ]]; then
    test_tool slurmd tests/system/test_slurm.py slurmctld slurmd slurm-client
fi
# tests/unit/test_k8s_manifests.py lints deploy/slurm/compare.sbatch and the scripts with
# the shellcheck linter (a Debian package, like Slurm: a test tool, installed only in CI
# or when asked).
if [[ "$SETUP" != 0 ]] && [[ -n "${CI:-}" || "${HVD_VS_DDP_TEST_SHELLCHECK:-}" == 1 ]]; then
    test_tool shellcheck tests/unit/test_k8s_manifests.py shellcheck
fi
# --- the reports read in a browser (tests/unit/test_report_browser.py) -----------------
# Chromium from Debian's archive (a test tool, like shellcheck: installed in CI or with
# HVD_VS_DDP_TEST_BROWSER=1; Playwright drives it as the system browser, nothing is
# downloaded at run time) and axe-core, pinned, from npm into the project's cache (never
# committed). Without them those tests skip, saying why.
if [[ "$SETUP" != 0 ]] && [[ -n "${CI:-}" || "${HVD_VS_DDP_TEST_BROWSER:-}" == 1 ]]; then
    test_tool chromium tests/unit/test_report_browser.py chromium
    axe_version=4.11.0  # hvd_vs_ddp/reports/browser_check.py AXE_VERSION
    axe_dir="${HVD_VS_DDP_CACHE:-$HOME/.cache/hvd-vs-ddp}/axe"
    if [[ "${HVD_VS_DDP_CACHE:-}" != off ]] && ! grep -qs "\"version\": \"$axe_version\"" \
            "$axe_dir/node_modules/axe-core/package.json"; then
        if command -v npm >/dev/null 2>&1; then
            echo "test: installing axe-core $axe_version into $axe_dir"
            npm install -s --no-save --no-audit --no-fund --prefix "$axe_dir" \
                "axe-core@$axe_version" >/dev/null \
                || echo "test: npm could not install axe-core (no accessibility check)" >&2
        else
            echo "test: no npm, so no axe-core (the accessibility check will skip)" >&2
        fi
    fi
fi
# --- end of the reports read in a browser ---------------------------------------------
# tests/system/test_dead_rank.py also kills ranks under Open MPI 5's mpirun and MPICH's
# mpiexec: their PyPI wheels, each in a virtualenv of its own under the project's cache
# (~/.cache/hvd-vs-ddp/mpi by default; scripts/install_mpis.sh says how it is chosen;
# seconds; never fails: without them those tests skip, saying why).
if [[ "$SETUP" != 0 ]]; then
    bash "$ROOT/scripts/install_mpis.sh"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export PATH="$VENV/bin:$PATH"
# The tests start a few hundred Python processes; with PYTHONDONTWRITEBYTECODE set (this
# machine kind sets it) each compiled the test modules, the suites and pytest's rewritten
# assertions again (about 0.5 s of CPU a process). Their bytecode goes to __pycache__
# folders (git ignores them), written once.
unset PYTHONDONTWRITEBYTECODE
if [[ $TIER != extended ]]; then
    bash "$ROOT/scripts/lint.sh"  # ruff, mypy, hadolint
fi
cd "$ROOT"
phase() {  # phase NAME PYTEST-ARGS...: pytest's exit status
    local name=$1
    shift
    echo "test: $name"
    "$VENV/bin/python" -m pytest -p no:cacheprovider -ra "$@"
}
start=$(date +%s)
given=$#  # the caller's own pytest arguments
set +e
# The unit tests spread over every core (pytest-xdist, pinned in constraints.txt).
unit_par=()
if "$VENV/bin/python" -c "import xdist" 2>/dev/null; then
    unit_par=(-n auto)
fi
if [[ $TIER == extended ]]; then
    unit=5  # the default command ran them (and lint)
else
    phase "unit tests (tests/unit)" tests/unit "${unit_par[@]}" "$@"
    unit=$?
fi
set -e
# 5: no test ran (alone: a failure here; with -k/-m of the caller's, none may match)
if [[ $TIER != extended && $unit -ne 0 && ! ($unit -eq 5 && $given -gt 0) ]]; then
    echo "test: the unit tests failed (exit $unit); the multi-process tests were not started" >&2
    exit 1
fi
label="multi-process tests (tests/system, $TIER)"
set -- --system-tier "$TIER" "$@"
if [[ $QUICK -eq 1 ]]; then
    set -- -m quick "$@"
    label="multi-process tests (tests/system, quick: -m quick)"
fi
# Two pytest-xdist workers share the cores (tests/system/conftest.py keeps every test of
# one shared job on one worker, and the two-host tests together).
set +e
if [[ ${#unit_par[@]} -gt 0 ]]; then
    phase "$label: two at a time" tests/system -n 2 "$@"
    rc=$?
else
    phase "$label" tests/system "$@"
    rc=$?
fi
set -e
if [[ $rc -eq 5 && $unit -eq 5 ]]; then
    echo "test: pytest ran no test; that is a failure here" >&2
    rc=1
elif [[ $rc -eq 5 && ($given -gt 0 || $QUICK -eq 1) ]]; then
    rc=0  # the caller's selection matched unit tests only
fi
echo "test: done in $(( $(date +%s) - start )) s (both pytest phases), exit $rc"
exit $rc
