"""What a projection takes from a run directory: compute, layout, settings, fits.

Per workload of the run:
- compute: each library's own one-rank step where the run has it (framework overhead
  included), else the compute-only cell's step (the same step, no communication), as
  draws of a two-level bootstrap (repetitions, then steps) of the median;
- on a CPU run, ranks share the host's cores: a rank's compute at L ranks per node is
  the reference step x max(L, cores) / max(L_ref, cores) (time slicing past one rank
  per core); on GPUs each rank has its own device and the step stays as measured;
- layout: the workload rebuilt with the run's recorded sizes (hvd_vs_ddp/projection/layout.py);
- each library's settings: DDP's bucket cap and its own bucket sizes (ddp_stats),
  Horovod's fusion threshold and cycle time (backend_meta), per knob set;
- for `--interconnect measured`: alpha and beta fitted to that library's own
  allreduce sweep (suites/test_collectives.py), resampled for the band;
- the repetitions the report leaves out as disturbed (hvd_vs_ddp/run_model/disturbed.py) are left
  out here too; the cells whose timings still hold one (too few undisturbed repetitions
  to leave it out) are named in `Inputs.disturbed`, and no projected verdict from them
  is firm (hvd_vs_ddp/projection/verdict.py).

    for workload, inputs in from_run(Path("runs/x"), links=None, per_node=4): ...
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hvd_vs_ddp.backends import catalog
from hvd_vs_ddp.common.errors import InputError
from hvd_vs_ddp.projection.collectives import Cost, fit_alpha_beta
from hvd_vs_ddp.projection.model import DEFAULT_MEMCPY_BYTES_PER_S, Inputs, Library, Links
from hvd_vs_ddp.run_model import stats

DRAWS = 200


class ProjectionInputError(InputError):
    pass


@dataclass(frozen=True)
class Measured:
    """A library's throughput and step measured in the run (bare-model check, calibration)."""
    library: str
    workload: str
    devices: int
    samples_per_s: float
    step_s: float


def _bootstrap_medians(reps: list[np.ndarray], rng: np.random.Generator,
                       draws: int = DRAWS) -> np.ndarray:
    """Medians of the report's two-level bootstrap (repetitions, then steps inside each;
    hvd_vs_ddp/run_model/stats.py), so a band and a measured interval agree on the noise."""
    return np.exp(stats.boot_medians([r for r in reps if len(r)], rng, draws))


def _label(rec) -> str:
    meta = rec.backend_meta or {}
    label = rec.backend
    if catalog.library(rec.backend) == catalog.HOROVOD_LIB and meta.get("controller"):
        label = f"{rec.backend}/{meta['controller']}"
    knob_set = getattr(rec, "knob_set", None) or "default"
    return label if knob_set == "default" else f"{label} [{knob_set}]"


def _library(label: str, recs: list, fits: list[tuple[int, float, list[float]]],
             rng: np.random.Generator) -> Library:
    rec = recs[0]
    meta = rec.backend_meta or {}
    knobs = rec.knobs or {}
    kw: dict = {}
    if catalog.library(rec.backend) == catalog.HOROVOD_LIB:
        kind = catalog.HOROVOD_LIB
        kw["fusion_bytes"] = float(meta.get("fusion_threshold_bytes") or 128 * 2**20)
        kw["cycle_s"] = float(meta.get("cycle_time_ms") or 1.0) / 1000
        kw["hierarchical"] = bool(knobs.get("hierarchical"))
    else:
        kind = catalog.DDP
        stats = next((r.ddp_stats for r in recs if r.ddp_stats), None) or {}
        cap = stats.get("bucket_cap_bytes") or (knobs.get("bucket_mb") or 25) * 2**20
        kw["bucket_bytes"] = float(cap)
        if stats.get("bucket_sizes"):
            kw["bucket_sizes"] = tuple(int(s) for s in stats["bucket_sizes"])
    if fits:
        points = [(p, n, float(np.median(ts))) for p, n, ts in fits]
        kw["measured"] = fit_alpha_beta(points)
        draws: list[Cost] = []
        for _ in range(50):
            sample = [(p, n, float(np.median(np.asarray(ts)[rng.integers(len(ts), size=len(ts))])))
                      for p, n, ts in fits]
            draws.append(fit_alpha_beta(sample))
        kw["measured_draws"] = tuple(draws)
        kw["measured_devices"] = max(p for p, _, _ in fits)
    return Library(label, kind, **kw)


@dataclass
class _Run:
    """What from_run reads once from a run directory, for every workload and mode."""
    path: Path
    cores: int
    on_gpu: bool
    recs: list            # typed records of several kinds, told apart by KIND
    bench: list           # (record, repetition)
    left_out: list[str]   # notes on the repetitions left out as disturbed
    disturbed: list[str]  # cells still disturbed (too few quiet repetitions)
    memcpy_bps: float


def from_run(run_dir: Path, links: Links | None, per_node: int,
             workloads: list[str] | None = None, seed: int = 0,
             ) -> list[tuple[str, Inputs, list[Measured]]]:
    """Each workload (and input mode) of the run as the projection's inputs, in named
    steps: the run read once (`_read_run`), then per case the reference compute
    (`_reference`), the libraries and what they measured (`_libraries`) and the inputs
    that gather them (`_case_inputs`)."""
    rng = np.random.default_rng(seed)
    run = _read_run(Path(run_dir))
    names = sorted({r.workload for r in run.recs if r.KIND in ("throughput", "compute_only")})
    if not names:
        raise ProjectionInputError(f"{run_dir}: no throughput or compute-only results: "
                                   "nothing to project from (run the throughput suite)")
    for w in workloads or []:
        if w not in names:
            raise ProjectionInputError(f"--workloads {w}: not in {run_dir} (it has "
                                       f"{', '.join(names)})")
    out = []
    # a run with the input-pipeline axis projects each input mode apart
    # (tensors in memory, or JPEG files decoded on the host): "<workload> [jpeg]"
    cases = [(w, mode) for w in workloads or names for mode in _modes(run.bench, w)]
    for w, mode in cases:
        comp = [(r, k) for r, k in run.bench if r.KIND == "compute_only" and r.workload == w
                and _mode(r) == mode] or [(r, k) for r, k in run.bench
                                           if r.KIND == "compute_only" and r.workload == w]
        # fitted on one host's cells only: a cell across emulated hosts (its record's
        # `link`) is what python -m hvd_vs_ddp.projection.links predicts
        thr = [(r, k) for r, k in run.bench if r.KIND == "throughput" and r.workload == w
               and _mode(r) == mode and not getattr(r, "link", None)]
        ref, base, conc_median = _reference(run, w, comp, thr, rng)
        libs, measured = _libraries(run, w, thr, links, rng)
        inputs = _case_inputs(run, w, comp, thr, ref, base, conc_median, libs, links,
                              per_node)
        out.append((w if mode == "memory" else f"{w} [{mode}]", inputs, measured))
    return out


def _read_run(run_dir: Path) -> _Run:
    """The run loaded as the report loads it: disturbed repetitions left out, the rest
    named; the host-to-host copy rate of a CPU run (its memcpy records)."""
    from hvd_vs_ddp.results_schema import ResultsError
    from hvd_vs_ddp.run_model.disturbed import load_judged_run, still_disturbed

    try:
        run = load_judged_run(run_dir)  # as the report does: disturbed repetitions out
    except (ResultsError, InputError) as exc:
        raise ProjectionInputError(f"{run_dir}: {exc}") from None
    left_out = run.disturbed_notes
    disturbed = still_disturbed(run)     # and those too few to leave out
    on_gpu = run.gpus > 0
    recs: list[Any] = [b.record for b in run.benchmarks()]
    bench: list[tuple[Any, int]] = [(b.record, b.rep) for b in run.benchmarks()]
    memcpy = [r.bandwidth_gbps for r in recs if r.KIND == "memcpy"]
    memcpy_bps = (float(np.median(memcpy)) * 1e9 if memcpy and not on_gpu
                  else DEFAULT_MEMCPY_BYTES_PER_S)
    return _Run(run_dir, run.cores, on_gpu, recs, bench, left_out, list(disturbed),
                memcpy_bps)


def _reference(run: _Run, w: str, comp: list, thr: list, rng: np.random.Generator
               ) -> tuple[int, np.ndarray, dict[int, float]]:
    """The per-rank compute: the compute-only cells at the most concurrent ranks that
    fit the host's cores (else the one-rank throughput steps), as bootstrap draws of
    the median, and the median step at each concurrency measured."""
    if comp:
        conc = sorted({r.concurrent_ranks or r.world_size for r, _ in comp})
        fitting = [c for c in conc if c <= run.cores] or conc[:1]
        ref = max(fitting)
        ref_reps = [r.step_times for r, _ in comp
                    if (r.concurrent_ranks or r.world_size) == ref]
    else:
        single = [r for r, _ in thr if r.world_size == 1]
        if not single:
            raise ProjectionInputError(
                f"{run.path}: workload {w} has no compute-only cell nor a one-rank "
                "throughput result: the per-rank compute time is unknown")
        ref = 1
        ref_reps = [r.step_times for r in single]
    base = _bootstrap_medians(ref_reps, rng)
    conc_median = {c: float(np.median(np.concatenate(
        [r.step_times for r, _ in comp if (r.concurrent_ranks or r.world_size) == c])))
        for c in {r.concurrent_ranks or r.world_size for r, _ in comp}}
    one = [r.step_times for r, _ in thr if r.world_size == 1]
    if one and 1 not in conc_median:  # one rank communicates nothing: its step is compute
        conc_median[1] = float(np.median(np.concatenate(one)))
    return ref, base, conc_median


def _libraries(run: _Run, w: str, thr: list, links: Links | None,
               rng: np.random.Generator) -> tuple[list[Library], list[Measured]]:
    """Each library that ran above one rank (one per backend, controller and knob set),
    with its settings, its allreduce fits (`--interconnect measured`), its own
    one-device step on GPUs, and its throughput measured at each size."""
    libs: list[Library] = []
    measured: list[Measured] = []
    for label, rs in _by_label(thr):
        launchers = {r.launcher for r in rs if r.world_size > 1}
        fits = [(c.world_size, float(s.bytes), list(s.times)) for c in run.recs
                if c.KIND == "collective" and c.op == "allreduce"
                and c.backend == rs[0].backend and c.launcher in launchers
                and c.world_size > 1 for s in c.sizes if s.times and s.correct]
        if links is None and len({(p, n) for p, n, _ in fits}) < 2:
            raise ProjectionInputError(
                f"{run.path}: {label} has no allreduce sweep at 2 or more ranks (the "
                "collectives suite): --interconnect measured needs one; name an "
                "interconnect instead, or run the quick or full preset")
        lib = _library(label, rs, fits if links is None else [], rng)
        one = [r.step_times for r in rs if r.world_size == 1]
        if one and run.on_gpu:  # its own one-device step: framework overhead included
            # (not on a CPU: one rank there has every core's threads, unlike N ranks)
            lib = _with_compute(lib, _bootstrap_medians(one, rng))
        libs.append(lib)
        for size in sorted({r.world_size for r in rs}):
            at = [r for r in rs if r.world_size == size]
            measured.append(Measured(
                label, w, size, float(np.median([np.median(r.samples_per_s) for r in at])),
                float(np.median(np.concatenate([r.step_times for r in at])))))
    if not libs:
        raise ProjectionInputError(f"{run.path}: workload {w} has no DDP or Horovod "
                                   "throughput result: no library to project")
    return libs, measured


def _by_label(thr: list) -> list[tuple[str, list]]:
    """A library is what ran above one rank (its controller known), with the same
    backend and knob set at one rank added; sorted by label."""
    by_label: dict[str, list] = {}
    for r, _ in thr:
        if r.world_size > 1 and catalog.library(r.backend) in catalog.COMPARED:
            by_label.setdefault(_label(r), []).append(r)
    for rs in by_label.values():
        rs += [r for r, _ in thr if r.world_size == 1 and r.backend == rs[0].backend
               and (r.knob_set or "default") == (rs[0].knob_set or "default")]
    return sorted(by_label.items())


def _case_inputs(run: _Run, w: str, comp: list, thr: list, ref: int, base: np.ndarray,
                 conc_median: dict[int, float], libs: list[Library], links: Links | None,
                 per_node: int) -> Inputs:
    """The inputs of one workload and mode: layout, compute (time-sliced on a CPU run),
    the run's notes and disturbed cells, stragglers and the host pipeline."""
    from hvd_vs_ddp.projection.layout import workload_layout

    sample: Any = (thr or comp)[0][0]
    layout = workload_layout(w, dict(sample.workload_params or {}), sample.per_rank_batch)
    inputs = Inputs(layout, int(sample.per_rank_batch), base, libs, links, per_node,
                    run.memcpy_bps)
    if not run.on_gpu:
        inputs.compute_at = _cpu_scaling(ref, run.cores, conc_median)
        inputs.notes.append(f"CPU run: ranks share the host's {run.cores} cores; a rank's "
                            f"compute at L ranks per node is the compute-only step "
                            f"measured at L ranks where the run has it "
                            f"({', '.join(map(str, sorted(conc_median))) or 'none'}), "
                            f"else the {ref}-rank one x max(L, {run.cores}) / "
                            f"{max(ref, run.cores)} (time slicing)")
    inputs.notes += run.left_out
    inputs.disturbed = list(run.disturbed)
    inputs.run_cores = run.cores
    inputs.run_on_cpu = not run.on_gpu  # its distance to GPU targets is carried
    _stragglers(inputs, [r for r, _ in comp if (r.concurrent_ranks or r.world_size) == ref]
                or [r for r, _ in thr if r.world_size == 1])
    _host_pipeline(inputs, [r for r, _ in thr], run.cores)
    return inputs


def _mode(rec: Any) -> str:
    return _opt(rec, "input_mode") or "memory"


def _modes(bench: list, workload: str) -> list[str]:
    """The input modes a workload's throughput cells ran with, memory first."""
    found = {_mode(r) for r, _ in bench if r.KIND == "throughput" and r.workload == workload}
    return sorted(found or {"memory"}, key=lambda m: (m != "memory", m))


# -- what grows with N, from one node's measurements ---------------------------
def _stragglers(inputs: Inputs, recs: list) -> None:
    """The per-rank step spread (stragglers.py) from the reference cells' per-rank
    steps: each repetition's fit (the tail's excess in seconds: relative times that
    repetition's median step); the band draws between the lowest and highest of each
    (at least +-20% about the middle)."""
    from hvd_vs_ddp.projection.stragglers import fit

    fits = []
    for r in recs:
        rows = r.rank_step_times or [r.step_times]
        sigma, beta = fit(rows)
        if sigma > 0 or beta > 0:
            fits.append((sigma, beta * float(np.median(np.concatenate(
                [np.asarray(x, dtype=float) for x in rows])))))
    if not fits:
        return

    def spread(xs: list[float]) -> tuple[float, float]:
        lo, hi, mid = min(xs), max(xs), float(np.median(xs))
        return min(lo, 0.8 * mid), max(hi, 1.2 * mid)

    sig, tail = spread([f[0] for f in fits]), spread([f[1] for f in fits])
    inputs.jitter = (sig, tail)
    inputs.notes.append(f"stragglers: a rank's step spread fitted to the run's per-rank "
                        f"steps ({len(fits)} cell repetition(s)): body sigma "
                        f"{sig[0]:.1%}-{sig[1]:.1%}, tail mean excess {tail[0] * 1000:.3g}-"
                        f"{tail[1] * 1000:.3g} ms; the slowest of N ranks sets each step "
                        "(hvd_vs_ddp/projection/stragglers.py)")


def _opt(rec: Any, name: str) -> Any:
    """An optional field of the contract: the typed attribute once the schema has it
    (getattr), else the record's unknown keys, where a newer writer's additions are
    kept (results_schema/fields.py `extra`), else None."""
    value = getattr(rec, name, None)
    return value if value is not None else (getattr(rec, "extra", None) or {}).get(name)


def _host_pipeline(inputs: Inputs, thr: list, cores: int) -> None:
    """The input pipeline as the run measured it (51a's optional throughput fields, read
    with getattr so that runs without them work): its loader CPU per batch, workers, and
    each library's own process cores at the run's largest world size."""
    from hvd_vs_ddp.projection.host import HostPipeline

    modes = {_opt(r, "input_mode") for r in thr} - {None}
    if not modes:
        return  # the run predates the input axis: not measured
    jpeg = [r for r in thr if _opt(r, "input_mode") == "jpeg"
            and _opt(r, "loader_cpu_cores") is not None]
    if not jpeg:
        if "memory" in modes:
            inputs.notes.append("input pipeline: the run fed tensors from memory only")
        return
    cpu_s = [float(_opt(r, "loader_cpu_cores")) * float(np.median(r.step_times))
             for r in jpeg]
    workers = int(np.median([_opt(r, "loader_workers") or 1 for r in jpeg]))
    main: dict[str, float] = {}
    for kind in (catalog.DDP, catalog.HOROVOD_LIB):
        mine = [r for r in jpeg if catalog.library(r.backend) == kind
                and _opt(r, "host_cpu_cores") is not None]
        if mine:
            top = max(r.world_size for r in mine)
            main[kind] = float(np.median([_opt(r, "host_cpu_cores") for r in mine
                                          if r.world_size == top]))
    inputs.host = HostPipeline(float(np.median(cpu_s)), workers, float(cores), main,
                               measured=True, source="the run's --input jpeg cells")
    inputs.pipeline_measured = True
    waits = [float(np.median(_opt(r, "data_wait_s") or [0.0])) for r in jpeg]
    inputs.notes.append(
        f"input pipeline on the host (measured): {np.median(cpu_s) * 1000:.4g} CPU ms a "
        f"batch over {workers} worker(s) per rank; each rank's own process "
        + ", ".join(f"{k} {v:.2f} cores" for k, v in main.items())
        + f"; median data wait {np.median(waits) * 1000:.3g} ms a step at the run's sizes")


def _cpu_scaling(ref: int, cores: int, measured: dict[int, float]):
    def compute_at(t: float, local: int) -> float:
        if local in measured and ref in measured:
            return t * measured[local] / measured[ref]
        return t * max(local, cores) / max(ref, cores)
    return compute_at


def _with_compute(lib: Library, draws: np.ndarray) -> Library:
    from dataclasses import replace
    return replace(lib, compute_s=tuple(float(x) for x in draws))
