"""The suites' checks can fail: break each distributed backend, and a named test fails.

One real job (horovodrun --mpi, 2 ranks: it starts all five distributed backends,
ddp-gloo, ddp-mpi, fsdp, zero and horovod) runs suites/test_convergence.py::
test_convergence on mlp with tests/plugins/mutations.py: every test once as it is (the
control, which must pass) and once per mutation (`test_convergence[BACKEND-mlp-mutant-
MUTATION]`), each mutation patching the backend's own methods for that test only. Each
case below is one row of the mutation table: the mutation, the backend, the test that
must fail and the check that must say why (the checks are the suite's: the ranks'
weights compared bitwise, the losses and the weights against `single`). The same job
runs the throughput test of a knob set that changes the maths (fp16 compression), whose
loss bound a sum for the average must break (suites/test_throughput.py).

    python -m pytest tests/system/test_mutations.py -q      # one launch
"""
from __future__ import annotations

import json

import pytest

from tests.launch import LEAN_PLUGINS, explain, horovod_available, launched

pytestmark = [pytest.mark.multiproc, pytest.mark.quick]

LAUNCHER, RANKS = "horovodrun-mpi", 2
BACKENDS = ("ddp-gloo", "ddp-mpi", "fsdp", "zero", "horovod")
RANKS_DIFFER = "ranks hold different weights"
LOSS = "loss deviates from single"
WEIGHTS = "weights deviate from single's"

# mutation -> backend -> the checks that must report it (every one listed must appear).
EXPECTED: dict[str, dict[str, tuple[str, ...]]] = {
    # Ranks start from their own seeds: without the broadcast, replicas stay apart (the
    # average of different models' gradients moves each by the same step); fsdp and zero
    # end equal (shards gathered; ZeRO broadcasts each updated partition) but not single.
    "no-broadcast": {"ddp-gloo": (RANKS_DIFFER, LOSS, WEIGHTS),
                     "ddp-mpi": (RANKS_DIFFER, LOSS, WEIGHTS),
                     "horovod": (RANKS_DIFFER, LOSS, WEIGHTS),
                     "fsdp": (LOSS, WEIGHTS), "zero": (LOSS, WEIGHTS)},
    # A sum is world size x the average: every step too long, on every rank alike.
    "sum": {b: (LOSS, WEIGHTS) for b in BACKENDS},
    # No reduction: each rank trains on its own shard alone.
    "no-reduction": {"ddp-gloo": (RANKS_DIFFER, LOSS, WEIGHTS),
                     "ddp-mpi": (RANKS_DIFFER, LOSS, WEIGHTS),
                     "horovod": (RANKS_DIFFER, LOSS, WEIGHTS),
                     "fsdp": (LOSS, WEIGHTS), "zero": (LOSS, WEIGHTS)},
    # One bias left rank-local: the averaged loss barely moves; only the weights show it.
    "one-unreduced": {"ddp-gloo": (RANKS_DIFFER,), "ddp-mpi": (RANKS_DIFFER,),
                      "horovod": (RANKS_DIFFER,), "zero": (WEIGHTS,)},
}
CASES = [(m, b) for m, per in EXPECTED.items() for b in per]
# The loss bound of a knob set that changes the maths can fail too: fp16 compression with
# a sum for the average (the throughput test of that set, suites/test_throughput.py).
BOUND = "beyond the set's bound"
BOUND_CASES = [("sum", b) for b in ("ddp-gloo", "ddp-mpi", "zero", "horovod")]


@pytest.fixture(scope="module")
def mutation_log(tmp_path_factory) -> tuple[dict[str, dict], str]:
    """{nodeid: the rank-0 log line of its call (or failed set-up)}, and the job's output."""
    ok, why = horovod_available()
    if not ok:
        pytest.skip(f"horovod: {why}")
    log = tmp_path_factory.mktemp("mutations") / "log.jsonl"
    proc = launched(LAUNCHER, RANKS, [
        "-m", "pytest", *LEAN_PLUGINS, "suites/test_convergence.py::test_convergence",
        "suites/test_throughput.py::test_throughput", "-k", "mlp", "-p", "no:cacheprovider",
        "-q", "-rfEs", "--convergence-steps", "5", "--workloads", "mlp", "--knob-set",
        "fp16-compress", "--warmup-steps", "2", "--rounds", "1", "--steps-per-round", "2",
        "--ddp-sample-rate", "0",
        "--backends", ",".join(BACKENDS), "--test-time-limit", "300"], timeout=600,
        extra_env={"PYTEST_PLUGINS": "tests.plugins.mutations",
                   "HVD_VS_DDP_MUTATIONS": ",".join(EXPECTED),
                   "HVD_VS_DDP_MUTATION_LOG": str(log)})
    out = explain(proc)
    assert log.exists(), f"the job logged no test:\n{out}"
    lines = [json.loads(ln) for ln in log.read_text().splitlines() if ln.strip()]
    return {(ln["control"], ln["mutation"]): ln for ln in lines
            if ln["when"] == "call" or ln["outcome"] != "passed"}, out


def _failure(line: dict) -> str:
    """What the failed assertions said (the report also quotes the test's source, which
    names every check: only the `AssertionError: ...` lines count)."""
    said = [ln.split("AssertionError: ", 1)[1] for ln in line["message"].splitlines()
            if "AssertionError: " in ln]
    return " || ".join(said)


def _test(backend: str) -> str:
    return f"suites/test_convergence.py::test_convergence[{backend}-mlp]"


def _throughput(backend: str) -> str:
    return f"suites/test_throughput.py::test_throughput[{backend}-mlp-fp16-compress]"


def test_every_backend_passes_unmutated(mutation_log):
    """The control: the same tests in the same job pass when nothing is broken."""
    logged, out = mutation_log
    for name in [*map(_test, BACKENDS), *(_throughput(b) for _, b in BOUND_CASES)]:
        line = logged.get((name, None))
        assert line is not None, f"{name} did not run:\n{out}"
        assert line["outcome"] == "passed", f"{name}: {line['message']}"


@pytest.mark.parametrize("mutation, backend", BOUND_CASES,
                         ids=[f"{m}-{b}" for m, b in BOUND_CASES])
def test_mutation_breaks_the_loss_bound(mutation_log, mutation, backend):
    logged, out = mutation_log
    line = logged.get((_throughput(backend), mutation))
    assert line is not None, f"{_throughput(backend)} with {mutation} did not run:\n{out}"
    assert line["outcome"] == "failed" and BOUND in _failure(line), line["message"][-1500:]


@pytest.mark.parametrize("mutation, backend", CASES, ids=[f"{m}-{b}" for m, b in CASES])
def test_mutation_fails_its_test(mutation_log, mutation, backend):
    logged, out = mutation_log
    name = f"{_test(backend)} with {mutation}"
    line = logged.get((_test(backend), mutation))
    assert line is not None, f"{name} did not run:\n{out}"
    assert line["outcome"] == "failed", f"{name} {line['outcome']} with {mutation} applied"
    said = _failure(line)
    missing = [check for check in EXPECTED[mutation][backend] if check not in said]
    assert not missing, f"{name} failed, but without {missing}: {said or line['message']}"
