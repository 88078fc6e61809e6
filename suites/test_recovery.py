"""Recovery: a worker SIGKILLed mid-training under each library's elastic path, measured.

For every selected backend's elastic paths (hvd_vs_ddp/recovery/plan.py: horovod under
Horovod Elastic; ddp-gloo under torchrun's elastic agent, and under torchft where it is
installed) and each of their commit/checkpoint patterns (Horovod: TorchState.commit in
memory; torchrun: torch.save on rank 0, torch.distributed.checkpoint; torchft: none, a
restarted replica heals from a live peer), this test launches the elastic job of one
plan (same workload, seed, global batch, steps, a commit or checkpoint every k steps)
at --recovery-world-size ranks over two host names, SIGKILLs a worker on the second
host once it completed the kill step, and records a `recovery` record: seconds from
the kill to the next completed step, steps lost, world size after, completion, final
loss and weights against the uninterrupted reference of the plan (computed here, in
one process), commit/save/restore times, and the pre-kill step intervals against the
same path's run without commits (the steady-state cost; run once per path and world).
It runs in ONE process (world size 1, no launcher): the test starts the elastic job
itself, and only when this file is named (`pytest suites/` leaves it out: minutes of
elastic jobs). `hvd-vs-ddp run --preset recovery` runs it per path and world size,
repeated. Its options come from the typed suite run (the `suite` fixture,
hvd_vs_ddp/harness/suite_run.py); each trial's folder (beside --benchmark-json, or a
temporary one) passes the output gate first (hvd_vs_ddp/recovery/driver.py `claim`).

    python -m pytest suites/test_recovery.py --recovery-world-size 2 --benchmark-json r.json
    python -m pytest suites/test_recovery.py --backends horovod --recovery-world-size 3
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from hvd_vs_ddp.backends import registry
from hvd_vs_ddp.harness import suite_run
from hvd_vs_ddp.harness.suite_run import SuiteRun
from hvd_vs_ddp.recovery.driver import run_trial
from hvd_vs_ddp.recovery.plan import (
    NO_COMMIT,
    PATHS,
    Plan,
    default_kill_step,
    path_for,
    paths_for,
)
from hvd_vs_ddp.recovery.reference import (
    TOLERANCE,
    loss_rel_diff,
    reference_run,
    weights_rel_diff,
)
from hvd_vs_ddp.recovery.training import FINAL
from hvd_vs_ddp.results_schema import RecoveryRecord

_REFERENCES: dict[tuple, tuple] = {}   # plan without its path -> (losses, weights)
_BASELINES: dict[tuple, list] = {}  # (path, plan) -> no-commit [step, interval]s
WARMUP_STEPS = 5  # intervals up to this step are left out of the steady-state cost


def _named(config) -> bool:
    """Was this file asked for by name? `pytest suites/` leaves it out: it starts elastic
    jobs of its own for minutes, which no other suite's run wants."""
    return any(Path(a.split("::")[0]).name == Path(__file__).name for a in config.args)


def pytest_generate_tests(metafunc):
    if "recovery_case" not in metafunc.fixturenames:
        return
    config = metafunc.config
    if not _named(config):
        metafunc.parametrize("recovery_case", [pytest.param(
            ("-", None), marks=pytest.mark.skip(reason="runs only when named: pytest "
                                                       "suites/test_recovery.py"))], ids=["-"])
        return
    suite = suite_run.of(config)
    # --backends narrowed the choice (else: every backend, those with a path)
    explicit = set(suite.backends) != set(registry.names())
    cases = []
    for name in suite.backends:
        paths = paths_for(name)
        cases += [(name, p.name, cp) for p in paths for cp in p.checkpoints]
        if not paths and explicit:
            cases.append((name, None, None))  # fails saying why it has no elastic path
    metafunc.parametrize("recovery_case", cases,
                         ids=[f"{b}-{p or 'no-elastic-path'}-{cp}" if p == "torchft" else
                              f"{b}-{cp or 'no-elastic-path'}" for b, p, cp in cases])


def _plan(suite: SuiteRun, backend: str, path_name: str, checkpoint: str) -> Plan:
    opts = suite.options
    return Plan(path=path_name, checkpoint=checkpoint, backend=backend,
                world_size=opts.recovery_world_size, min_world=opts.recovery_min_world,
                steps=opts.recovery_steps, commit_every=opts.recovery_commit_every,
                kill_step=opts.recovery_kill_step or default_kill_step(
                    opts.recovery_steps, opts.recovery_commit_every),
                workload=opts.recovery_workload,
                workload_params=dict(opts.workload_params.get(opts.recovery_workload, {})),
                global_batch=opts.recovery_global_batch,
                timeout_s=opts.recovery_collective_timeout).check()


def _trial_dir(suite: SuiteRun, tmp_path: Path, name: str) -> Path:
    """Beside --benchmark-json when given (the logs stay with the results), else tmp."""
    results = suite.results_json
    if results:
        return Path(results).with_suffix("").with_name(Path(results).stem + ".recovery") / name
    return tmp_path / name


def _reference(plan: Plan):
    key = (plan.workload, repr(sorted(plan.workload_params.items())), plan.global_batch,
           plan.steps, plan.world_size)
    if key not in _REFERENCES:
        _REFERENCES[key] = reference_run(plan)
    return _REFERENCES[key]


def _baseline(plan: Plan, folder: Path, limit: float, owner: Path | None) -> list[float]:
    """Step intervals of the same path and plan without commits and without a kill
    (torchft, which has no commits: torchrun's DDP without commits, so its own per-step
    quorum is its steady-state cost)."""
    if plan.elastic.per_step:
        plan = plan.replace(path=path_for(plan.backend).name)
    key = (plan.path, plan.world_size, plan.steps, plan.global_batch, plan.workload)
    if key not in _BASELINES:
        trial = run_trial(plan.replace(checkpoint=NO_COMMIT, kill_step=None),
                          folder / f"{plan.path}-no-commit", limit, owner)
        fig = trial.figures()
        assert fig["completed"] and not trial.hang, (
            f"{plan.path}: the run without commits did not complete\n{trial.log_tail()}")
        _BASELINES[key] = fig["step_intervals"]
    return _BASELINES[key]


def _overhead(with_commits: list, without: list) -> float | None:
    """Mean step interval with commits / without - 1, over the steps both ran after
    warm-up (means: a commit lands in one interval of k, which a median would miss)."""
    a, b = dict(with_commits), dict(without)
    common = [s for s in a if s in b and s > WARMUP_STEPS]
    if len(common) < 2:
        return None
    return float(np.mean([a[s] for s in common]) / np.mean([b[s] for s in common]) - 1.0)


def _share(intervals: list, commits: list[float], every: int) -> float | None:
    """The commits' own seconds per k steps of work: median commit / (k x median step)."""
    plain = [dt for s, dt in intervals if s > WARMUP_STEPS and (s - 1) % every]
    if not commits or not plain:
        return None
    return float(np.median(commits) / (every * np.median(plain)))


def _finite(x: float | None) -> float | None:
    return x if x is not None and np.isfinite(x) else None


def test_recovery(benchmark, suite, plugin, recovery_case, tmp_path):
    backend, path_name, checkpoint = recovery_case
    if path_name is None:
        path_for(backend)  # fails with the one line saying why it has no elastic path
    if plugin.env.world_size != 1:
        pytest.skip("the recovery suite starts its own elastic job: run it in one process "
                    "(pytest suites/test_recovery.py, no launcher)")
    why = suite.plan.why_not(backend)  # judged once, in the cell's plan (cell_plan.py)
    if why:
        pytest.skip(f"{backend}: {why}")
    path = PATHS[path_name]
    missing = suite.plan.path_missing(path_name)  # its launcher, package, tools
    if missing:
        pytest.skip(f"{path.name}: {missing}")
    limit = suite.options.recovery_time_limit
    owner = Path(suite.options.run_dir) if suite.options.run_dir else None
    plan = _plan(suite, backend, path_name, checkpoint)
    folder = _trial_dir(suite, tmp_path, f"{backend}-np{plan.world_size}")
    baseline = _baseline(plan, folder, limit, owner)
    box = {}

    def trial_once():
        box["trial"] = run_trial(plan, folder / f"{path.name}-{checkpoint}", limit, owner)

    benchmark.pedantic(trial_once, rounds=1, warmup_rounds=0, iterations=1)
    trial = box["trial"]
    fig = trial.figures()
    ref_losses, ref_weights = _reference(plan)
    final = trial.directory / FINAL
    wdiff = weights_rel_diff(torch.load(final, weights_only=True), ref_weights) \
        if fig["completed"] and final.exists() else None
    ldiff = loss_rel_diff(fig["final_loss"], ref_losses[-1]) if fig["completed"] else None
    exact = fig["world_after"] == plan.world_size and not path.per_step  # same steps, same world
    within = wdiff is not None and ldiff is not None and wdiff <= TOLERANCE \
        and ldiff <= TOLERANCE
    intervals = fig["step_intervals"]
    benchmark.group = f"recovery np{plan.world_size}"
    benchmark.extra_info.update(RecoveryRecord(
        backend=backend, world_size=plan.world_size, launcher=path.launcher,
        path=path.name, library=path.library, checkpoint=checkpoint,
        workload=plan.workload, workload_params=plan.workload_params,
        global_batch=plan.global_batch, steps=plan.steps, commit_every=plan.commit_every,
        min_world=plan.min_world, hosts=[f"{h}:{n}" for h, n in plan.hosts()],
        kill_step=plan.kill_step, victim=trial.kill, completed=fig["completed"],
        hang=trial.hang, leftovers=len(trial.leftovers), world_before=fig["world_before"],
        world_after=fig["world_after"], killed_after_step=fig["killed_after_step"],
        last_commit_step=fig["last_commit_step"], resume_step=fig["resume_step"],
        steps_lost=fig["steps_lost"], recovery_s=fig["recovery_s"],
        rendezvous_s=fig["rendezvous_s"], restore_s=fig["restore_s"], sync_s=fig["sync_s"],
        final_loss=fig["final_loss"], reference_final_loss=ref_losses[-1],
        final_loss_rel_diff=_finite(ldiff), weights_rel_diff=_finite(wdiff),
        tolerance=TOLERANCE, exact_replay=exact, within_tolerance=within,
        commit_s=fig["commit_s"], save_s=fig["save_s"], step_intervals=intervals,
        baseline_step_intervals=baseline, commit_overhead=_overhead(intervals, baseline),
        commit_share=_share(intervals, fig["commit_s"], plan.commit_every),
        timeline=fig["timeline"], segments=fig["segments"], kill_t=fig["kill_t"],
        recovered_t=fig["recovered_t"], collective_timeout_s=plan.timeout_s,
        trial_seconds=trial.seconds, returncodes=trial.returncodes,
    ).to_dict())
    where = f"{path.name} ({checkpoint}) at {plan.world_size} ranks, trial in {trial.directory}"
    assert trial.kill is not None, f"{where}: no worker reached step {plan.kill_step} to " \
        f"be killed\n{trial.log_tail()}"
    assert not trial.hang, f"{where}: still running after {limit:.0f}s\n{trial.log_tail()}"
    assert not trial.leftovers, f"{where}: processes outlived the job: {trial.leftovers}"
    assert fig["completed"], f"{where}: the plan did not complete\n{trial.log_tail()}"
    assert plan.world_after() <= (fig["world_after"] or 0) <= plan.world_size, (
        f"{where}: {fig['world_after']} ranks after recovery, expected "
        f"{plan.world_after()}..{plan.world_size}")
    want = fig["killed_after_step"] if path.per_step else fig["last_commit_step"]
    assert fig["resume_step"] == want, (
        f"{where}: resumed at step {fig['resume_step']}, expected {want} (the last "
        f"{'committed step' if path.per_step else 'commit before the kill'})")
    assert within, (f"{where}: final loss off the uninterrupted run by {ldiff:.3g}, weights "
                    f"by {wdiff:.3g} (relative; tolerance {TOLERANCE:g})")
