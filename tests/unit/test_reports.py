"""Tests of hvd_vs_ddp/reports/: statistics, every refused input, and the rendered report.

    .venv/bin/python -m pytest tests/unit/test_reports.py -q
    .venv/bin/python -m tests.test_reports /tmp/report-dev [--two]  # render a dev report

!!! CONSTRUCTED INPUTS, NOT MEASUREMENTS !!!
The run directories below are assembled by `write_run` from a seeded numpy RNG,
through the results records (hvd_vs_ddp/results_schema/), only to exercise the renderer.
Their numbers
(step times, losses, bandwidths, monitor samples) are invented; nothing here says
anything about Horovod or DDP. Real fixtures from suite runs go under
tests/fixtures/runs/.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hvd_vs_ddp.backends import catalog
from hvd_vs_ddp.reports import ReportError, build_report
from hvd_vs_ddp.reports.compare import add_scaling, exposed_comm
from hvd_vs_ddp.reports.tables import failed_table, throughput_table
from hvd_vs_ddp.reports.theme import color
from hvd_vs_ddp.results_schema import (
    FORMAT_VERSION,
    CellEntry,
    CollectiveRecord,
    CollectiveSize,
    ComputeOnlyRecord,
    ConvergenceRecord,
    MachineInfo,
    Manifest,
    MemcpyRecord,
    ThroughputRecord,
    TimeToAccuracyRecord,
)
from hvd_vs_ddp.run_model.frames import build_frames
from hvd_vs_ddp.run_model.labels import backend_label
from hvd_vs_ddp.run_model.load import load_run
from hvd_vs_ddp.run_model.pairs import hvd_vs_ddp
from hvd_vs_ddp.run_model.stats import RatioCI, iqr, median, ratio_ci
from hvd_vs_ddp.run_model.verdicts import (
    EQUIVALENT,
    FASTER,
    INCONCLUSIVE,
    classify,
    judge,
    reps_needed,
)

ROOT = Path(__file__).resolve().parents[2]
CONSTRUCTED = "CONSTRUCTED renderer test input, not a measurement"
KNOBS = {"precision": "fp32", "accumulation_steps": 1, "compression": "none", "bucket_mb": None,
         "num_workers": 0, "checkpointing": False, "set_to_none": True, "channels_last": False}
HVD_META = {"gloo": {"controller": "gloo", "ops": "gloo", "fusion_threshold": 134217728},
            "mpi": {"controller": "mpi", "ops": "mpi", "fusion_threshold": 134217728}}
# (backend, controller, world size, launcher, base seconds per step at batch 32/rank)
THROUGHPUT_CELLS = [
    ("single", None, 1, "single", 0.100),
    ("ddp-gloo", None, 2, "torchrun", 0.120),
    ("horovod", "gloo", 2, "horovodrun-gloo", 0.120),   # same speed: expect no difference
    ("ddp-mpi", None, 2, "mpirun", 0.130),
    ("ddp-gloo", None, 4, "torchrun", 0.180),
    ("horovod", "gloo", 4, "horovodrun-gloo", 0.140),   # clearly faster at np=4
    ("horovod", "mpi", 4, "mpirun", 0.150),
]
FAILED_ERROR = "RuntimeError: NCCL error: unhandled system error (constructed)"


# ---------------------------------------------------------------- the builder
def _stats(times) -> dict:
    t = np.asarray(times, float)
    q1, q3 = np.percentile(t, [25, 75])
    return {"min": t.min(), "max": t.max(), "mean": t.mean(), "stddev": t.std(ddof=1),
            "median": float(np.median(t)), "q1": q1, "q3": q3, "iqr": q3 - q1,
            "rounds": int(t.size), "iterations": 1, "ops": 1 / t.mean(), "total": t.sum(),
            "outliers": "0;0", "iqr_outliers": 0, "stddev_outliers": 0,
            "ld15iqr": t.min(), "hd15iqr": t.max()}


def _bench(name: str, times, info: dict) -> dict:
    return {"group": None, "name": name, "fullname": f"suites/constructed.py::{name}",
            "params": None, "param": None, "extra_info": info, "options": {},
            "stats": {k: (float(v) if isinstance(v, (np.floating, float)) else v)
                      for k, v in _stats(times).items()}}


def _common(backend, controller, ws, launcher) -> dict:
    meta = {"note": CONSTRUCTED}
    if backend == "horovod":
        meta.update(HVD_META[controller])
    elif backend.startswith("ddp-"):
        meta["process_group"] = backend[4:]
    return {"backend": backend, "world_size": ws, "launcher": launcher, "backend_meta": meta}


def _throughput(rng, backend, controller, ws, launcher, base, workload, speed,
                monitored: bool = True) -> dict:
    """monitored=False: no monitor samples (they are drawn all the same, so that the
    rest of the run's numbers do not depend on it)."""
    rounds, spr, prb = 5, 8, 32
    rank_times = base * speed * rng.lognormal(0, 0.05, size=(ws, rounds * spr))
    slowest = rank_times.max(axis=0)
    sps = (prb * ws / slowest).tolist()
    t = np.arange(0, 12, 0.5)
    ranks = [{"rank": r, "t": t.tolist(),
              "cpu_percent": np.clip(rng.normal(170, 15, t.size), 0, 200).round(1).tolist(),
              "rss_mb": (420 + 8 * r + 3 * t + rng.normal(0, 2, t.size)).round(1).tolist(),
              "gpu_util": None, "gpu_mem_mb": None} for r in range(ws)]
    return ThroughputRecord(
        **_common(backend, controller, ws, launcher),
        workload=workload, workload_params={"note": CONSTRUCTED}, knobs=KNOBS,
        knob_set="default", per_rank_batch=prb, global_batch=prb * ws,
        warmup_steps=3, steps_per_round=spr, rounds=rounds,
        step_times=slowest.tolist(),
        rank_step_times=rank_times.tolist(), samples_per_s=sps,
        samples_per_s_median=float(np.median(sps)),
        samples_per_s_iqr=np.percentile(sps, [25, 75]).tolist(),
        memory={"max_rss_mb": [460.0 + r for r in range(ws)], "cuda_max_allocated_mb": None},
        monitor={"interval_s": 0.5, "ranks": ranks} if monitored else None).to_dict()


def _convergence(rng, backend, controller, ws, launcher, dev) -> dict:
    steps = np.arange(60)
    ref = 2.3 * np.exp(-steps / 20) + 0.1
    losses = ref * (1 + rng.normal(0, dev, steps.size))
    rel = float(np.max(np.abs(losses - ref) / ref))
    return ConvergenceRecord(
        **_common(backend, controller, ws, launcher),
        workload="digits", steps=int(steps.size), losses=losses.tolist(),
        reference_losses=ref.tolist(), max_rel_dev=rel, tolerance=0.02,
        within_tolerance=rel <= 0.02,
        wall_times=np.cumsum(rng.uniform(0.03, 0.04, steps.size)).tolist(),
        reference_wall_times=np.cumsum(np.full(steps.size, 0.05)).tolist()).to_dict()


def _collectives(rng, backend, controller, ws, launcher, eff) -> list[dict]:
    """One benchmark per op holding the size sweep, as suites/test_collectives.py writes."""
    out = []
    for op, factor in (("allreduce", 2 * (ws - 1) / ws), ("allgather", (ws - 1) / ws)):
        sizes = []
        for b in [4 * 16 ** k for k in range(7)]:
            times = (2e-5 + b / (eff * 2e9)) * rng.lognormal(0, 0.03, 20)
            alg = b / np.median(times) / 1e9
            sizes.append(CollectiveSize(bytes=b, times=times.tolist(),
                                        time_median=float(np.median(times)), algbw_gbps=alg,
                                        busbw_gbps=alg * factor, correct=True))
        out.append(_bench(f"test_collective[{backend}-{op}]", [1.0, 1.0], CollectiveRecord(
            **_common(backend, controller, ws, launcher),
            op=op, dtype="float32", sizes=sizes).to_dict()))
    return out


def write_run(root: Path, seed: int = 0, speedup: float = 1.0, failed: bool = True,
              minimal: bool = False) -> Path:
    """Assemble a run directory under root (see the module docstring: constructed data).
    speedup multiplies Horovod's speed (for before/after runs); minimal = throughput only."""
    rng = np.random.default_rng(seed)
    (root / "cells").mkdir(parents=True)
    (root / "logs").mkdir()
    env = {"OMP_NUM_THREADS": "1", "HOROVOD_FUSION_THRESHOLD": "134217728",
           "HOROVOD_CYCLE_TIME": "1"}
    versions = {"python": "3.11.7", "torch": "2.13.0+cpu", "horovod": "0.28.1",
                "mpi": "Open MPI 4.1.4", "nccl": None}
    hardware = {"cpu": "constructed CPU", "cores": 2, "memory_gb": 23.4, "gpus": []}
    cells = []

    def cell(suite, backend, ws, launcher, benches, status="passed", error=None):
        cid = f"{suite}-{backend}-np{ws}-{launcher}"
        if status == "passed":
            doc = {"machine_info": {"node": "constructed", "hvd_vs_ddp": MachineInfo(
                launcher=launcher, world_size=ws,
                versions=versions, hardware=hardware, env=env).to_dict()},
                "commit_info": {}, "benchmarks": benches,
                "datetime": "2026-11-22T04:00:00", "version": "5.3.1"}
            (root / "cells" / f"{cid}.json").write_text(json.dumps(doc))
        (root / "logs" / f"{cid}.log").write_text(f"{CONSTRUCTED}\n")
        cells.append(CellEntry(id=cid, suites=[suite], backend=backend, launcher=launcher,
                               world_size=ws, status=status, error=error, seconds=12.5,
                               results=f"cells/{cid}.json", log=f"logs/{cid}.log"))

    for backend, ctl, ws, launcher, base in THROUGHPUT_CELLS:
        speed = 1 / speedup if backend == "horovod" else 1.0
        name = backend if ctl is None else f"{backend}-{ctl}"
        # Monitor samples on mlp's records of a full run only: the report draws one
        # figure per monitored cell, and every test that builds a report pays for each
        # (14 of them were two thirds of a minimal run's report time).
        infos = [_throughput(rng, backend, ctl, ws, launcher, base * f, wl, speed,
                             monitored=wl == "mlp" and not minimal)
                 for wl, f in (("mlp", 1.0), ("resnet18", 3.0))]
        benches = [_bench(f"test_throughput[{name}-{i['workload']}]",
                          np.ravel(i["step_times"]), i) for i in infos]
        cell("throughput", backend if ctl is None else f"horovod-{ctl}", ws, launcher, benches)
    if failed:
        cell("throughput", "ddp-nccl", 2, "torchrun", [], status="failed", error=FAILED_ERROR)
        cell("throughput", "ddp-gloo", 8, "torchrun", [], status="pending")
    if not minimal:
        for ws, launcher in ((1, "single"), (2, "torchrun"), (4, "torchrun")):
            co = [_bench(f"test_compute_only[{wl}]", t, ComputeOnlyRecord(
                backend="single", world_size=ws,
                launcher=launcher, concurrent_ranks=ws, workload=wl, knobs=KNOBS,
                knob_set="default", per_rank_batch=32, step_times=t.tolist(),
                step_time_median=float(np.median(t))).to_dict())
                for wl, f in (("mlp", 1.0), ("resnet18", 3.0))
                for t in [0.095 * f * (1 + 0.05 * (ws - 1)) * rng.lognormal(0, 0.04, 30)]]
            cell("compute", "single", ws, launcher, co)
        for backend, ctl, launcher, dev in (("ddp-gloo", None, "torchrun", 0.002),
                                            ("horovod", "gloo", "horovodrun-gloo", 0.004)):
            conv = _convergence(rng, backend, ctl, 2, launcher, dev)
            tta = TimeToAccuracyRecord(
                **_common(backend, ctl, 2, launcher),
                workload="digits", target=0.95, reached=True,
                seconds=float(rng.uniform(8, 10)), steps=120,
                curve=[[s, s * 0.08, min(0.97, 0.5 + s / 200)] for s in range(0, 130, 10)],
            ).to_dict()
            cell("convergence", backend if ctl is None else f"horovod-{ctl}", 2, launcher,
                 [_bench("test_convergence", conv["wall_times"], conv),
                  _bench("test_time_to_accuracy", [tta["seconds"], tta["seconds"]], tta)])
        coll = _collectives(rng, "ddp-gloo", None, 2, "torchrun", 0.8) + \
            _collectives(rng, "horovod", "gloo", 2, "horovodrun-gloo", 1.0)
        mem = [_bench("test_memcpy", t, MemcpyRecord(
            backend="memcpy", world_size=2, launcher="torchrun", device="cpu", bytes=b,
            times=t.tolist(), bandwidth_gbps=b / float(np.median(t)) / 1e9).to_dict())
            for b in (2 ** 26,) for t in [b / 9e9 * rng.lognormal(0, 0.02, 10)]]
        cell("collectives", "ddp-gloo+horovod", 2, "mixed", coll + mem)
    manifest = Manifest(command=["hvd-vs-ddp", "run", "--preset", "constructed"],
                        preset="constructed", git_commit="0" * 40,
                        started="2026-11-22T04:00:00+00:00",
                        finished="2026-11-22T04:12:00+00:00", complete=not failed,
                        versions=versions, hardware=hardware, env=env,
                        workloads=["mlp", "resnet18"], knob_set="default", cells=cells)
    (root / "manifest.json").write_text(json.dumps(manifest.to_dict(), indent=1))
    return root


def _digest(d: Path) -> dict[str, str]:
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(d.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One full constructed run and the report built from it."""
    tmp = tmp_path_factory.mktemp("report")
    run = write_run(tmp / "run-a", seed=1)
    before = _digest(run)
    paths = build_report([run], tmp / "out" / "report.html")
    return run, paths, before


# ---------------------------------------------------------------- statistics
def test_median_and_iqr_match_numpy():
    x = np.random.default_rng(3).normal(10, 2, 101)
    assert median(x) == float(np.median(x))
    assert iqr([1, 2, 3, 4, 5]) == (2.0, 4.0)
    assert iqr(x) == tuple(np.percentile(x, [25, 75]))


@pytest.mark.parametrize("true_ratio", [0.7, 1.3, 2.0])
def test_bootstrap_ci_contains_true_ratio_for_clear_cases(true_ratio):
    rng = np.random.default_rng(7)
    den = rng.normal(100, 2, 300)
    num = rng.normal(100 * true_ratio, 2 * true_ratio, 300)
    ci = ratio_ci(num, den)  # one repetition each: a within-run interval
    assert ci.lo <= true_ratio <= ci.hi
    assert ci.lo <= ci.ratio <= ci.hi
    assert ci.hi - ci.lo < 0.05 * true_ratio
    assert ci.reps == 1 and ci.within_run_only
    v = judge(ci, 0.05, 2, "horovod", "ddp")
    assert v.verdict == FASTER and v.faster == ("horovod" if true_ratio > 1 else "ddp")
    assert v.strength == "indicative" and "indicative" in v.text()


def test_bootstrap_same_distribution_is_equivalent_and_reproducible():
    rng = np.random.default_rng(11)
    a, b = rng.normal(100, 5, 200), rng.normal(100, 5, 200)
    ci = ratio_ci(a, b)
    assert ci.contains(1.0)
    assert judge(ci, 0.05, 2, "horovod", "ddp").verdict == EQUIVALENT
    assert ratio_ci(a, b) == ci  # fixed seed: same inputs, same interval


def test_two_level_bootstrap_widens_with_run_to_run_variation():
    """Repetitions whose levels differ: the interval must cover that spread, which a
    bootstrap of steps alone (the old one) does not."""
    rng = np.random.default_rng(5)
    levels = [1.0, 1.06, 0.95, 1.03]
    num = [100 * lv * rng.lognormal(0, 0.01, 20) for lv in levels]
    den = [100 * rng.lognormal(0, 0.01, 20) for _ in levels]
    two = ratio_ci(num, den)
    flat = ratio_ci(np.concatenate(num), np.concatenate(den))
    assert two.reps == 4 and not two.within_run_only
    assert two.ratio == pytest.approx(flat.ratio)
    assert (two.hi - two.lo) > 2 * (flat.hi - flat.lo)
    assert ratio_ci(num, den) == two


def test_margin_verdicts():
    m = 0.05
    assert classify(1.06, 1.2, m) == FASTER and classify(0.8, 0.95, m) == FASTER
    assert classify(0.96, 1.04, m) == EQUIVALENT
    assert classify(1.0, 1.1, m) == INCONCLUSIVE  # straddles 1.05
    assert classify(0.9, 1.1, m) == INCONCLUSIVE
    assert classify(1 / 1.05, 1.05, m) == EQUIVALENT  # the band's edges are inside


def test_verdict_wording_overhead_and_repetitions_needed():
    ci = RatioCI(1.038, 1.034, 1.045, reps=1)  # the example at 1 rank
    v = judge(ci, 0.05, 1, "horovod (mpi)", "ddp-mpi")
    assert v.verdict == EQUIVALENT and v.scope == "overhead"
    assert v.text().startswith("framework overhead without communication (1 rank): ")
    assert "indicative" in v.text()
    v = judge(RatioCI(1.2, 1.1, 1.3, reps=3), 0.05, 1, "horovod", "ddp-gloo")
    assert v.verdict == FASTER and "faster" not in v.text()
    assert "horovod ran 20% more samples/s than ddp-gloo" in v.text()
    v = judge(RatioCI(1.10, 1.07, 1.13, reps=3), 0.05, 2, "horovod", "ddp-gloo")
    assert v.text().startswith("horovod is 10% faster than ddp-gloo (ratio 1.100 [1.070-1.130]")
    wide = RatioCI(1.0, 0.94, 1.06, reps=3)
    n = reps_needed(wide, 0.05)
    assert n is not None and n > 3
    v = judge(wide, 0.05, 2, "horovod", "ddp")
    assert v.verdict == INCONCLUSIVE and f"about {n} repetitions" in v.text()
    assert reps_needed(RatioCI(1.04, 0.98, 1.10, reps=1), 0.05) is None


# ---------------------------------------------------------------- bad inputs
def _one_line_error(excinfo, *words):
    msg = str(excinfo.value)
    assert isinstance(excinfo.value, ValueError) and "\n" not in msg
    for w in words:
        assert w in msg, msg


def test_run_dir_without_manifest(tmp_path):
    (tmp_path / "run").mkdir()
    with pytest.raises(ReportError) as e:
        build_report([tmp_path / "run"], tmp_path / "r.html")
    _one_line_error(e, "no manifest.json")


@pytest.mark.parametrize("content, words", [
    ("", ["empty"]),
    ('{"format": "hvd-vs-ddp/run", "format_version": 1, "cells": [', ["truncated"]),
    ("this is not json", ["not JSON"]),
    ('{"format": "something-else", "format_version": 1, "cells": []}', ["not a hvd-vs-ddp"]),
    ('{"benchmarks": []}', ["not a hvd-vs-ddp"]),
    (f'{{"format": "hvd-vs-ddp/run", "format_version": {FORMAT_VERSION + 1}, "cells": []}}',
     ["newer", "upgrade"]),
])
def test_bad_manifest(tmp_path, content, words):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "manifest.json").write_text(content)
    with pytest.raises(ReportError) as e:
        build_report([tmp_path / "run"], tmp_path / "r.html")
    _one_line_error(e, "manifest.json", *words)


def _first_results(run: Path) -> Path:
    man = json.loads((run / "manifest.json").read_text())
    return run / next(c["results"] for c in man["cells"] if c["status"] == "passed")


def _assert_unreadable(run: Path, out: Path, path: Path, *words: str) -> None:
    """The report is written; the cell of `path` is listed as unreadable, with a reason
    that names the file and holds `words`, in the Markdown, the HTML and verdicts.json."""
    before = _digest(run)
    paths = build_report([run], out)
    assert _digest(run) == before
    assert len(paths.unreadable) == 1 and path.name in paths.unreadable[0], paths.unreadable
    reason = paths.unreadable[0].split(": ", 2)[2]
    assert "\n" not in reason
    for w in words:
        assert w in reason, reason
    vj = json.loads(paths.verdicts.read_text())
    assert [u["reason"] for u in vj["unreadable"]] == [reason]
    for text in (paths.markdown.read_text(), paths.html.read_text()):
        assert "unreadable" in text and path.name in text
    cell = vj["unreadable"][0]["cell"]
    assert f"| {cell} | unreadable |" in paths.markdown.read_text()


@pytest.mark.parametrize("mutate, words", [
    (lambda t: "", ["empty"]),
    (lambda t: t[: len(t) // 2], ["truncated"]),
    (lambda t: "<html>not json</html>", ["not JSON"]),
    (lambda t: '{"results": [1, 2, 3]}', ["another tool", "benchmarks"]),
    (lambda t: '{"benchmarks": [], "machine_info": {}}', ["machine_info.hvd_vs_ddp"]),
    (lambda t: t.replace(f'"format_version": {FORMAT_VERSION}', '"format_version": 9'),
     ["newer", "9"]),
])
def test_bad_cell_results(tmp_path, mutate, words):
    run = write_run(tmp_path / "run", minimal=True)
    path = _first_results(run)
    path.write_text(mutate(path.read_text()))
    _assert_unreadable(run, tmp_path / "r.html", path, *words)


def _drop_field(text: str) -> str:
    doc = json.loads(text)
    del doc["benchmarks"][0]["extra_info"]["samples_per_s"]
    return json.dumps(doc)


def test_benchmark_missing_a_needed_field(tmp_path):
    run = write_run(tmp_path / "run", minimal=True)
    path = _first_results(run)
    path.write_text(_drop_field(path.read_text()))
    _assert_unreadable(run, tmp_path / "r.html", path, "lacks samples_per_s")


def test_missing_results_file(tmp_path):
    run = write_run(tmp_path / "run", minimal=True)
    path = _first_results(run)
    path.unlink()
    _assert_unreadable(run, tmp_path / "r.html", path, "missing", "passed")


def _set_status(run: Path, status: str, error: str | None) -> str:
    man = json.loads((run / "manifest.json").read_text())
    cell = next(c for c in man["cells"] if c["status"] == "passed")
    cell.update(status=status, error=error)
    (run / "manifest.json").write_text(json.dumps(man))
    return cell["id"]


def test_interrupted_cell_is_reported_like_a_failed_one(tmp_path):
    run = write_run(tmp_path / "run", minimal=True)
    cell = _set_status(run, "interrupted", "interrupted by SIGTERM (constructed)")
    paths = build_report([run], tmp_path / "r.html")
    md = paths.markdown.read_text()
    assert f"| {cell} | interrupted | interrupted by SIGTERM (constructed) |" in md
    assert "failed, timed out or were interrupted" in md and not paths.unreadable


def test_running_cell_is_refused_with_the_way_out(tmp_path):
    run = write_run(tmp_path / "run", minimal=True)
    cell = _set_status(run, "running", None)
    with pytest.raises(ReportError) as e:
        build_report([run], tmp_path / "r.html")
    _one_line_error(e, "manifest.json", cell, "'running'", "--resume")
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("rel", ["report.html", "sub/dir/report.html", "cells/x.html"])
def test_output_inside_results_dir_is_refused(tmp_path, rel):
    run = write_run(tmp_path / "run", minimal=True)
    before = _digest(run)
    with pytest.raises(ReportError) as e:
        build_report([run], run / rel)
    _one_line_error(e, "inside the results directory")
    assert _digest(run) == before


def test_output_must_be_html(tmp_path):
    run = write_run(tmp_path / "run", minimal=True)
    with pytest.raises(ReportError) as e:
        build_report([run], tmp_path / "report.pdf")
    _one_line_error(e, ".html")


def test_cli_prints_one_line_and_exits_2(tmp_path):
    (tmp_path / "empty").mkdir()
    p = subprocess.run([sys.executable, "-m", "reports", str(tmp_path / "empty"), "-o",
                        str(tmp_path / "r.html")], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "no manifest.json" in p.stderr


# ---------------------------------------------------------------- the rendered report
def test_run_dir_is_not_modified(built):
    run, paths, before = built
    assert _digest(run) == before
    assert paths.html.is_file() and paths.markdown == paths.html.with_suffix(".md")


def test_tables_show_the_numbers_put_in(built):
    run, paths, _ = built
    md = paths.markdown.read_text()
    html = paths.html.read_text()
    rows = [ln for ln in md.splitlines() if ln.startswith("| run-a |")]
    checked = 0
    for f in sorted((run / "cells").glob("throughput-*.json")):
        for b in json.loads(f.read_text())["benchmarks"]:
            info = b["extra_info"]
            label = info["backend"] + (f" ({info['backend_meta']['controller']})"
                                       if info["backend"] == "horovod" else "")
            sps = np.asarray(info["samples_per_s"])
            want = f"{np.median(sps):.1f}"
            q25, q75 = np.percentile(sps, [25, 75])
            hits = [r for r in rows if f"| {info['workload']} | {label} | {info['world_size']} |"
                    in r and f"| {want} |" in r]
            assert len(hits) == 1, (label, info["world_size"], want)
            assert f"{q25:.1f}–{q75:.1f}" in hits[0]
            step = np.median(np.ravel(info["step_times"])) * 1e3
            assert f"| {step:.2f} |" in hits[0]
            assert f">{want}<" in html
            checked += 1
    assert checked == 2 * len(THROUGHPUT_CELLS)


def test_table_frame_equals_numpy(built):
    run, _, _ = built
    tp = add_scaling(build_frames([load_run(run)]).throughput)
    for _, r in tp.iterrows():
        assert r["sps_median"] == float(np.median(r["samples"]))
    df = throughput_table(tp).df
    assert len(df) == len(tp)


def test_exposed_comm_uses_concurrent_compute_only(built):
    run, _, _ = built
    data = build_frames([load_run(run)])
    ex = exposed_comm(data)
    co = data.compute_only
    assert len(ex) == 2 * (len(THROUGHPUT_CELLS) - 1)  # every distributed cell, not single
    for _, r in ex.iterrows():
        assert r["compute_ranks"] == r["world_size"]
        want = co[(co["ranks"] == r["world_size"]) & (co["workload"] == r["case"])]
        assert r["compute_s"] == want["step_median"].iloc[0]
        tp = data.throughput
        step = tp[(tp["series"] == r["series"]) & (tp["world_size"] == r["world_size"])
                  & (tp["case"] == r["case"])]["step_median"].iloc[0]
        assert r["exposed_s"] == pytest.approx(step - r["compute_s"])


def test_horovod_vs_ddp_verdicts_and_headline(built):
    run, paths, _ = built
    cmp = hvd_vs_ddp(add_scaling(build_frames([load_run(run)]).throughput))
    # every horovod series against every ddp transport at the same world size
    assert len(cmp) == 2 * (2 + 2)  # 2 workloads x (np2: 1 hvd x 2 ddp; np4: 2 hvd x 1 ddp)
    np4 = cmp[(cmp["world_size"] == 4) & (cmp["horovod"] == "horovod (gloo)")]
    assert set(np4["verdict"]) == {FASTER} and set(np4["faster"]) == {"horovod (gloo)"}
    assert set(cmp["strength"]) == {"indicative"}  # constructed runs: one repetition
    for _, r in cmp.iterrows():
        assert r["lo"] <= r["ratio"] <= r["hi"]
    md = paths.markdown.read_text()
    answer = md.split("**Answer**")[1].split("## ")[0]
    line = next(ln for ln in answer.splitlines() if ln.startswith("- mlp at 4 ranks: "))
    assert "fastest measured: horovod (gloo)" in line
    assert re.search(r"best Horovod / best DDP: horovod \(gloo\) is \d+% faster than ddp-gloo "
                     r"\(ratio \d\.\d{3} \[\d\.\d{3}-\d\.\d{3}\]\)", line), line
    assert "indicative only" in line
    assert re.search(r"- mlp at 2 ranks: .*best Horovod / best DDP: ", answer)


def test_failed_cell_is_shown(built):
    _, paths, _ = built
    for text in (paths.html.read_text(), paths.markdown.read_text()):
        assert "Failed cells" in text
        assert FAILED_ERROR in text
        assert "throughput-ddp-nccl-np2-torchrun" in text
        assert "throughput-ddp-gloo-np8-torchrun" in text  # pending: not run


def test_a_pending_cell_says_how_many_repetitions_ran():
    """An interrupted `run --repeat 3`: a cell with one repetition done is not 'not run'."""
    cells = pd.DataFrame([
        {"run": "r", "cell_id": "half", "status": "pending", "error": None, "log": "l1",
         "reps_done": 1, "reps": 3},
        {"run": "r", "cell_id": "none", "status": "pending", "error": None, "log": "",
         "reps_done": 0, "reps": 3},
        {"run": "r", "cell_id": "ok", "status": "passed", "error": None, "log": "",
         "reps_done": 3, "reps": 3}])
    rows = failed_table(cells).df.set_index("cell")["error"].to_dict()
    assert rows == {"half": "1 of 3 repetitions ran", "none": "not run"}


def test_html_is_self_contained(built):
    _, paths, _ = built
    html = paths.html.read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", html, re.I)
    assert "<link" not in html and "<script" not in html
    srcs = re.findall(r"""src=['"]([^'"]*)""", html)
    assert srcs and all(s.startswith("data:image/png;base64,") for s in srcs)
    assert "<style>" in html


def test_markdown_figures_are_files_beside_it(built):
    _, paths, _ = built
    md = paths.markdown.read_text()
    refs = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    names = {Path(r).stem for r in refs}
    assert {"throughput", "scaling_efficiency", "step_times", "loss", "busbw",
            "exposed_comm", "monitor_00"} <= names
    for r in refs:
        assert (paths.markdown.parent / r).is_file()
        assert not r.startswith(("http:", "https:", "/"))
    assert set(paths.figures) == {paths.markdown.parent / r for r in refs}


def test_absent_data_is_a_note_not_an_error(tmp_path):
    run = write_run(tmp_path / "run", minimal=True, failed=False)
    paths = build_report([run], tmp_path / "out.html")
    md = paths.markdown.read_text()
    for title in ("Loss vs step", "Collective bus bandwidth", "Exposed communication"):
        assert f"{title}" in md and "not drawn" in md
    assert "No time-to-accuracy results." in md
    assert "Failed cells" not in md


def test_before_after_two_runs(tmp_path):
    a = write_run(tmp_path / "before", seed=1, minimal=True, failed=False)
    b = write_run(tmp_path / "after", seed=2, minimal=True, failed=False, speedup=1.25)
    paths = build_report([a, b], tmp_path / "out" / "cmp.html")
    md = paths.markdown.read_text()
    sect = md.split("## Before / after")[1].split("\n## ")[0]
    rows = [ln for ln in sect.splitlines() if ln.startswith("| ") and "horovod" in ln]
    assert rows and all("| B faster (indicative) |" in ln for ln in rows)
    assert "Run B (after) vs run A (before)" in sect
    assert "Run B vs run A, over 14 matching" in md.split("**Answer**")[1]


def test_reports_never_imports_torch(built):
    run, _, _ = built
    out = run.parent / "t" / "x.html"
    code = ("import sys; from pathlib import Path; import reports; "
            f"reports.build_report([Path({str(run)!r})], Path({str(out)!r})); "
            "print('torch' in sys.modules)")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False"


def test_report_is_reproducible(built, tmp_path):
    run, paths, _ = built
    again = build_report([run], tmp_path / "report.html")  # same name, other directory
    assert again.markdown.read_bytes() == paths.markdown.read_bytes()
    assert again.html.read_bytes() == paths.html.read_bytes()  # fixed seed, same PNGs


def test_backend_labels_and_fixed_colours():
    assert backend_label("horovod", {"controller": "mpi"}) == "horovod (mpi)"
    assert backend_label("horovod", {}) == "horovod"
    assert backend_label("ddp-gloo", {"controller": "x"}) == "ddp-gloo"
    # every backend of the catalog, and Horovod per controller, has a colour of its own
    labels = [*(n for n in catalog.NAMES if n != "horovod"), "horovod (gloo)",
              "horovod (mpi)"]
    colours = {lab: color(lab) for lab in labels}
    assert len(set(colours.values())) == len(colours), colours
    assert all(re.fullmatch(r"#[0-9A-F]{6}", c) for c in colours.values()), colours


def test_a_new_backend_keeps_its_colour_across_processes():
    """An unknown label's colour comes from a hash of its name that does not change with
    the interpreter's string-hash seed: the same colour in every report."""
    code = ("from hvd_vs_ddp.reports.theme import color; "
            "print(color('some-new-backend'), color('another-one'))")
    seen = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={**os.environ, "PYTHONHASHSEED": seed},
                           cwd=ROOT).stdout for seed in ("1", "2")}
    assert len(seen) == 1, seen
    assert seen.pop().split() == [color("some-new-backend"), color("another-one")]


if __name__ == "__main__":  # render a dev report from constructed inputs
    import tempfile
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/report-dev")
    work = Path(tempfile.mkdtemp())
    runs = [write_run(work / "run-a", seed=1)]
    if "--two" in sys.argv:
        runs.append(write_run(work / "run-b", seed=2, speedup=1.1))
    print(build_report(runs, out / "report.html"))
