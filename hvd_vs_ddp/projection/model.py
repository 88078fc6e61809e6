"""One projection: a library's step time on a target cluster, with a band.

Inputs a projection depends on (`Inputs`): the per-rank compute time (draws, so its
uncertainty travels), the gradient layout, the libraries' settings and a fabric
sampler (links from the interconnect table with their efficiency and latency drawn
over the table's ranges, or alpha-beta fits to the run's collectives, resampled).
`project()` draws inputs `draws` times, runs each library's schedule and reports the
median and the 2.5-97.5 percentiles of step time, samples/s and scaling efficiency
(per-device throughput over that of one device that communicates nothing).

    inputs = Inputs(layout, batch=32, compute_s=np.array([0.097]), ...)
    project(inputs, devices=[8, 64], draws=400)   # -> [Projected(...), ...]
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable

import numpy as np

from hvd_vs_ddp.backends import catalog
from hvd_vs_ddp.projection import stragglers
from hvd_vs_ddp.projection.collectives import Cost, Fabric
from hvd_vs_ddp.projection.host import HostPipeline, busy_probability, data_wait, slowest_handoffs
from hvd_vs_ddp.projection.interconnects import Link
from hvd_vs_ddp.projection.schedule import Step, StepCompute, ddp_step, horovod_step
from hvd_vs_ddp.projection.terms import Drawn, core_wait, draw

if TYPE_CHECKING:  # the layout tracer needs torch; the model only reads its result
    from hvd_vs_ddp.projection.layout import Layout

DEFAULT_MEMCPY_BYTES_PER_S = 300e9  # GPU device-to-device copy (HBM2 and later): assumed


@dataclass(frozen=True)
class Library:
    """One side's scheduling settings, as the run recorded them (or the defaults)."""
    label: str                     # e.g. "ddp-gloo", "horovod (horovodrun-gloo)"
    kind: str                      # "ddp" or "horovod"
    bucket_bytes: float = 25 * 2**20
    bucket_sizes: tuple[int, ...] | None = None   # DDP's own, where recorded
    fusion_bytes: float = 128 * 2**20
    cycle_s: float = 1e-3
    hierarchical: bool = False
    measured: Cost | None = None   # this library's own allreduce fit (interconnect measured)
    measured_draws: tuple[Cost, ...] = ()
    measured_devices: int = 2      # the (largest) world size the fit was measured at
    compute_s: tuple[float, ...] | None = None  # its own one-device step, where measured
    # Calibration: what the run measured at `residual_devices` minus what the model gives
    # there (framework overhead, contention the model leaves out), carried forward
    residual_s: float = 0.0
    residual_devices: int = 0
    accepted: tuple[int, ...] = ()  # the hypotheses (draw numbers) calibration kept
    # the script copies each batch from pageable host memory (terms.py,
    # 'pageable input'): a published row's `unpinned` column
    pinned: bool = True


@dataclass(frozen=True)
class Links:
    """A target built from the interconnect table."""
    intra: Link
    inter: Link | None
    nics_per_node: int = 1
    algorithm: str = "auto"

    def sample(self, rng: np.random.Generator, devices: int, per_node: int) -> Fabric:
        def draw(link: Link, scale: int = 1) -> Cost:
            eff = rng.uniform(*link.efficiency)
            lat = rng.uniform(*link.latency_us)
            return Cost(link.latency_s(lat), link.bytes_per_s(eff) * scale)

        inter = draw(self.inter, self.nics_per_node) if self.inter is not None else None
        return Fabric(devices, per_node, draw(self.intra), inter, self.algorithm)


@dataclass
class Inputs:
    layout: "Layout"
    batch: int                     # samples per device per step
    compute_s: np.ndarray          # draws of the per-rank compute step (no communication)
    libraries: list[Library]
    links: Links | None            # None: interconnect measured (each library's own fit)
    per_node: int
    memcpy_bytes_per_s: float = DEFAULT_MEMCPY_BYTES_PER_S
    compute_at: Callable[[float, int], float] = field(default=lambda t, local: t)
    notes: list[str] = field(default_factory=list)
    # GPU-side terms (hvd_vs_ddp/projection/terms.py): charged on GPU targets (a link
    # from the interconnect table, or a run on GPUs); a CPU run's own fits leave them out
    gpu: bool = True
    controller: str = "mpi"        # Horovod's CPU controller: "mpi" or "gloo"
    nccl_avg: bool = True          # NCCL >= 2.10 averages inside the allreduce
    bucket_view: bool = False      # DDP's gradient_as_bucket_view
    contention_scale: float = 1.0  # scales the contention range
    gpu_ready_wait: bool = True    # Horovod >= 0.23 waits for ready events on its stream
    model_error: "ModelError | None" = None  # out-of-sample error carried into bands
    # cells of the run the inputs come from whose timings kept other work's load
    # (hvd_vs_ddp/run_model/disturbed.py): no projected verdict from them is firm
    disturbed: list[str] = field(default_factory=list)
    # a rank's step-to-step spread (stragglers.py), ranges of the body's sigma
    # and of the tail's mean excess in seconds: from the run's per-rank steps; None: the
    # GPU defaults on GPU targets, none on a run's own fits
    jitter: tuple[tuple[float, float], tuple[float, float]] | None = None
    # the input pipeline's host cost (host.py); None: not on the host (tensors
    # in memory, or decoded on the GPU), or not measured (`pipeline_measured`)
    host: HostPipeline | None = None
    pipeline_measured: bool = False  # the run (or flags) said what feeds the ranks
    run_cores: int | None = None     # the host cores of the run it comes from
    # the optimizer's implementation (terms.py 'optimizer launches'): "foreach"
    # (torch >= 2.0 on CUDA, today's default) or "loop" (one launch or more per parameter)
    optimizer: str = "foreach"
    input_bytes: float = 0.0         # bytes of one sample's input (a pageable copy's size)
    run_on_cpu: bool = False         # the run it comes from had no GPU

    @property
    def jitter_range(self) -> tuple[tuple[float, float], tuple[float, float]]:
        if self.jitter is not None:
            return self.jitter
        if self.gpu and self.links is not None:
            return stragglers.GPU_SIGMA, stragglers.GPU_BETA_S
        return (0.0, 0.0), (0.0, 0.0)

    @property
    def intra_name(self) -> str:
        return self.links.intra.name if self.links is not None else ""

    def terms(self, rng: np.random.Generator) -> Drawn:
        inter = self.links.inter.name if self.links is not None and self.links.inter else ""
        return draw(rng, self.intra_name, self.controller, self.nccl_avg, inter,
                    self.bucket_view, self.contention_scale,
                    gpu_ready_wait=self.gpu_ready_wait, optimizer=self.optimizer)


@dataclass(frozen=True)
class ModelError:
    """The model's own error, from out-of-sample residuals (log of published over
    projected; hvd_vs_ddp/projection/errors.py), per key ("ddp", "horovod", "ratio"),
    split in two normals on the log scale centred on the model:
    - `model`: the model's own error about the truth, net of what the inputs' draws
      already spread and of the publications' own noise;
    - `noise`: how far one published (or measured) figure strays from the truth, from
      the spread of repeated figures of one configuration.
    A verdict is about the truth (`measurement=False`: model error only); a band that
    must hold a figure someone measures carries both. `total` and `inputs` (the
    residuals' spread and the draws' own) are kept for the record."""
    model: dict[str, float]
    noise: dict[str, float]
    n: dict[str, int]
    total: dict[str, float] = field(default_factory=dict)
    inputs: dict[str, float] = field(default_factory=dict)
    # the model's error grows with the scale factor s (devices projected over
    # devices measured): `growth[key]` x log2(s) in quadrature, fitted by extrapolation
    # (hvd_vs_ddp/projection/extrapolation.py) from `growth_rows` residuals
    growth: dict[str, float] = field(default_factory=dict)
    growth_rows: dict[str, int] = field(default_factory=dict)
    growth_sources: int = 0
    growth_widest: str = ""  # the study whose own losses set the libraries' growth
    distance: float = 0.0   # a further sd in log: a run on another kind of machine

    def sd(self, key: str, measurement: bool = True, scale: float = 1.0) -> float:
        m = math.hypot(self.model.get(key, 0.0),
                       self.growth.get(key, 0.0) * math.log2(max(scale, 1.0)), self.distance)
        return math.hypot(m, self.noise.get(key, 0.0)) if measurement else m

    def draws(self, key: str, rng: np.random.Generator, size: int,
              measurement: bool = True, scale: float = 1.0) -> np.ndarray:
        return rng.normal(0.0, self.sd(key, measurement, scale), size)


@dataclass(frozen=True)
class Band:
    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values: np.ndarray, centre: np.ndarray | None = None) -> "Band":
        """The 95% band of `values`; the median of `centre` where given (the inputs'
        draws: the model's error widens the band around them, it does not move them)."""
        lo, med, hi = np.percentile(values, [2.5, 50, 97.5])
        if centre is not None:
            med = np.median(centre)
        return cls(float(med), float(min(lo, med)), float(max(hi, med)))

    def as_list(self) -> list[float]:
        return [self.median, self.low, self.high]


@dataclass(frozen=True)
class Projected:
    library: str
    devices: int
    nodes: int
    step_s: Band
    samples_per_s: Band          # all devices together
    efficiency: Band
    exposed_comm_s: Band
    ops: int                     # allreduces per step (median draw)
    inputs_only: Band | None = None   # samples/s from the inputs' uncertainty alone
    draws: tuple[float, ...] = ()     # samples/s per draw, inputs only (paired by seed)
    terms: dict[str, float] = field(default_factory=dict)  # median seconds per term
    kind: str = ""                    # "ddp" or "horovod"


def _measured_fabric(cost: Cost, devices: int, per_node: int) -> Fabric:
    """A flat ring with the run's own alpha and beta between every pair of ranks."""
    return Fabric(devices, max(per_node, devices), cost, None, "ring")


def step_time(inputs: Inputs, lib: Library, fabric: Fabric, compute_s: float,
              terms: Drawn | None = None) -> Step:
    share = inputs.layout.backward_share
    compute = StepCompute(compute_s * (1 - share), compute_s * share)
    if fabric.devices <= 1:  # one device communicates nothing (Horovod registers no
        return Step(compute.total_s, 0.0, 0.0, 0)  # hooks at size 1; DDP reduces alone)
    if lib.kind == catalog.DDP:
        step = ddp_step(compute, inputs.layout.grads, fabric.allreduce, lib.bucket_bytes,
                        lib.bucket_sizes, terms)
    else:
        allreduce = fabric.allreduce
        negotiation = (terms.negotiation_s(fabric.devices, fabric.per_node)
                       if terms is not None else fabric.small_message_latency())
        if inputs.links is None:  # a fit to hvd.allreduce already holds its cycle wait
            # and negotiation: take out the half cycle the schedule adds back itself
            def allreduce(n: float, f=fabric, half=lib.cycle_s / 2) -> float:
                return max(0.0, f.allreduce(n) - half) if f.devices > 1 else 0.0
            negotiation = 0.0
        step = horovod_step(compute, inputs.layout.grads, allreduce, lib.fusion_bytes,
                            lib.cycle_s, negotiation, inputs.memcpy_bytes_per_s, terms)
    if not lib.pinned and terms is not None and inputs.input_bytes > 0:
        step = _pageable_input(inputs, lib, step, terms)
    return step


def _pageable_input(inputs: Inputs, lib: Library, step: Step, terms: Drawn) -> Step:
    """A batch copied from pageable host memory (terms.py 'pageable input'): the stream
    is synchronised before the copy, so the GPU waits for the copy and, for DDP, whose
    CPU was ahead, for the launches that start the next step (the host tail's fixed
    part; Horovod's is charged already). Horovod's GPU also waits for the main thread
    to receive the batch from the loader's workers (terms.py 'unpinned hand-off'),
    which DDP's CPU does ahead of its GPU."""
    copy = inputs.input_bytes * inputs.batch / terms.pageable_bytes_per_s
    parts = {"pageable input": copy}
    if lib.kind == catalog.DDP:
        parts["pageable input"] += terms.host_tail_fixed_s
    else:
        parts["unpinned hand-off"] = terms.unpinned_handoff_s
    extra = sum(parts.values())
    return replace(step, step_s=step.step_s + extra, exposed_s=step.exposed_s + extra,
                   terms={**step.terms, **parts})


def exposed_host_s(step: Step) -> float:
    """The host work a rank does while its GPU waits: Horovod's walk over its
    last handles and its host tail, a pageable input copy and its batch's hand-off."""
    return sum(step.terms.get(k, 0.0) for k in ("synchronize", "host tail",
                                                "pageable input",
                                                "unpinned hand-off"))


def residual(inputs: Inputs, lib: Library, local: int) -> float:
    """The calibration residual at `local` ranks per node: CPU work, so on a CPU run it
    time-slices with compute like the step does (compute_at's scaling). It belongs to
    communicating: one device carries none of it."""
    if not lib.residual_s:
        return 0.0
    ref = min(lib.residual_devices, inputs.per_node)
    return lib.residual_s * inputs.compute_at(1.0, local) / inputs.compute_at(1.0, ref)


def _draw(inputs: Inputs, lib: Library, n: int, idx: int, seed: int
          ) -> tuple[float, float, Step, float, Drawn | None]:
    """Draw number `idx` (one hypothesis about the machine: compute, links, terms) of
    `lib` at `n` devices: (step with the carried residual, compute, the schedule's
    step, one device's compute, the terms). The same idx is the same machine for every
    library and every size."""
    rng = np.random.default_rng([seed, idx])
    local = min(n, inputs.per_node)
    pool = lib.compute_s or inputs.compute_s
    t_ref = float(pool[int(rng.integers(len(pool)))])
    t = inputs.compute_at(t_ref, local)
    fits = lib.measured_draws or ((lib.measured,) if lib.measured else ())
    pick = int(rng.integers(max(1, len(fits))))
    if inputs.links is not None:
        fabric = inputs.links.sample(rng, n, inputs.per_node)
    else:
        if not fits:
            raise ValueError(f"{lib.label}: no allreduce measurements to fit")
        cost = fits[pick]
        # on a CPU run collectives are CPU work too: past one rank per core they
        # time-slice like compute (on GPUs compute_at is flat: f = 1)
        f = inputs.compute_at(1.0, local) / inputs.compute_at(
            1.0, min(lib.measured_devices, inputs.per_node))
        fabric = _measured_fabric(Cost(cost.alpha * f, cost.beta / f), n, inputs.per_node)
    terms = inputs.terms(rng) if inputs.gpu else None
    sig_range, beta_range = inputs.jitter_range
    sigma = float(rng.uniform(*sig_range))  # two calls whatever the ranges
    beta_s = float(rng.uniform(*beta_range))
    # the slowest of n ranks sets the synchronous step (stragglers.py): every rank's
    # compute is stretched to the expected maximum over n of its step distribution
    slow = stragglers.factor(sigma, n, beta_s / t if t > 0 else 0.0)
    s = step_time(inputs, lib, fabric, t * slow, terms)
    if slow > 1:
        s = replace(s, terms={**s.terms, "stragglers": t * (slow - 1)})
    if terms is not None and n > 1 and exposed_host_s(s) > 0:
        # host work with the GPU waiting: the slowest of n ranks' sets the step
        host = exposed_host_s(s) * (stragglers.factor(terms.host_sigma, n, terms.host_tail)
                                    - 1)
        s = replace(s, step_s=s.step_s + host, exposed_s=s.exposed_s + host,
                    terms={**s.terms, "host jitter": host})
    if (inputs.host is not None and terms is not None and n > 1
            and lib.kind != catalog.DDP):
        # Horovod's hand-offs at the end of a step, on a node whose cores the loader
        # takes: the slowest of n ranks' wait for a core (host.py slowest_handoffs)
        share = min(1.0, s.comm_s / s.step_s) if s.step_s > 0 else 0.0
        busy = busy_probability(inputs.host, lib.kind, local, s.step_s, share)
        late = slowest_handoffs(core_wait(seed, idx), n, busy)
        if late > 0:
            s = replace(s, step_s=s.step_s + late, exposed_s=s.exposed_s + late,
                        terms={**s.terms, "core wait": late})
    if inputs.host is not None:  # the loader on the node's cores (host.py)
        wait = data_wait(inputs.host, lib.kind, local, s.step_s, s.comm_s)
        s = replace(s, step_s=s.step_s + wait, terms={**s.terms, "data wait": wait})
    carried = residual(inputs, lib, local) if n > 1 else 0.0  # one device: no comm
    return max(s.step_s + carried, t), t, s, inputs.compute_at(t_ref, 1), terms


KEEP = 0.2  # calibration keeps this share of the machine hypotheses, the closest ones


def calibrate(inputs: Inputs, measured_step_s: dict[str, tuple[int, float]],
              draws: int = 200, seed: int = 0) -> list[str]:
    """Calibrate each library's terms on its step measured at the largest world size
    above 1 ({label: (devices, seconds)}), typically one node of the target machines:
    of `draws` hypotheses about the machine (every uncertain input and term drawn over
    its range), keep, on a target from the interconnect table, the KEEP share whose
    projected steps come closest to every library's measured one (in log, summed), and
    carry what is left between each library's measured step and its kept hypotheses'
    median to every size (on a run's own fits, `measured`, the residual alone). Notes say
    what was kept and carried."""
    cal = {k: lib for k, lib in enumerate(inputs.libraries) if lib.label in measured_step_s}
    if not cal:
        return []
    bare = {k: replace(lib, residual_s=0.0, residual_devices=0, accepted=())
            for k, lib in cal.items()}
    steps = {k: np.array([_draw(inputs, bare[k], measured_step_s[lib.label][0], i, seed)[0]
                          for i in range(draws)]) for k, lib in cal.items()}
    miss = {k: np.log(steps[k] / measured_step_s[lib.label][1]) ** 2
            for k, lib in cal.items()}
    n_keep = max(10, int(draws * KEEP))
    # A target from the interconnect table: both libraries share one machine, keep the
    # hypotheses that fit both. A run's own fits (`measured`) are each library's own
    # resampled sweep, which past the sizes it was measured at can be far off: no
    # selection there (it picked fits that extrapolate badly), the residual alone.
    select = inputs.links is not None
    kept = {k: np.sort(np.argsort(sum(miss.values()))[:n_keep]) if select
            else np.arange(draws) for k in cal}
    notes = [f"calibrated on the run: kept {n_keep} of {draws} hypotheses about the machine "
             "(compute, links and the terms of hvd_vs_ddp/projection/terms.py) whose "
             "projected steps come closest to every library's measured step"] if select \
        else []
    if inputs.gpu:
        first = next(iter(cal))
        picked = [_draw(inputs, bare[first], 2, int(i), seed)[4] for i in kept[first]]
        c = [d.contention for d in picked if d is not None]
        lead = [d.cpu_per_grad_s * 1e6 for d in picked if d is not None]
        if c:
            notes.append(f"kept terms: contention {min(c):.2f}-{max(c):.2f}, CPU "
                         f"{min(lead):.0f}-{max(lead):.0f} µs per gradient in backward")
    for k, lib in cal.items():
        n, measured = measured_step_s[lib.label]
        model = float(np.median(steps[k][kept[k]]))
        res = measured - model
        inputs.libraries[k] = replace(lib, residual_s=res, residual_devices=n,
                                      accepted=tuple(int(i) for i in kept[k]) if select
                                      else ())
        notes.append(f"{lib.label}: calibrated at {n} ranks: measured step "
                     f"{measured * 1000:.4g} ms, model{' (kept hypotheses)' if select else ''}"
                     f" {model * 1000:.4g} ms; the difference ({res * 1000:+.3g} ms) is "
                     "carried to every size")
    return notes


def error_scale(inputs: Inputs, n: int, lib: Library | None = None) -> float:
    """The scale factor the model's error grows with, devices projected over devices
    measured: the size `lib` (else every library) was calibrated at, 1 where
    only a compute time was measured, and 1 for a CPU run projected to GPUs (it
    measured no GPU at any size)."""
    if inputs.run_on_cpu and inputs.gpu:
        return float(n)
    libs = [lib] if lib is not None else inputs.libraries
    return n / max(1, min((x.residual_devices for x in libs), default=1))


def project(inputs: Inputs, devices: list[int], draws: int = 400,
            seed: int = 0) -> list[Projected]:
    """Each library at each size over `draws` draws of the inputs. Draw number i is the
    same hypothesis about the machine (links, terms, compute) for every library and
    every size, so the ratio of two libraries' draws carries only what differs between
    them; after `calibrate`, the draws cycle over the hypotheses it kept. With
    `inputs.model_error`, the bands also carry the model's own error and a measurement's
    noise: a library's band is where a measurement of it should fall."""
    out = []
    for lib in inputs.libraries:
        kept = lib.accepted
        for n in devices:
            steps, exposed, ops, base, parts = [], [], [], [], []
            compute_only: list[float] = []
            for k in range(draws):
                idx = kept[k % len(kept)] if kept else k
                step, t, s, one, _ = _draw(inputs, lib, n, idx, seed)
                steps.append(step)
                compute_only.append(t)
                exposed.append(s.exposed_s)
                ops.append(s.ops)
                base.append(one)
                parts.append(s.terms)
            steps_a = np.array(steps)
            sps = inputs.batch * n / steps_a
            err = np.zeros(draws)
            if inputs.model_error is not None and n > 1:
                err = inputs.model_error.draws(lib.kind, np.random.default_rng([seed, n, 7]),
                                               draws, scale=error_scale(inputs, n, lib))
            # error = log(published / projected) of samples/s; never faster than compute
            with_err = np.maximum(steps_a / np.exp(err), np.array(compute_only))
            keys = sorted({k for p in parts for k in p})
            out.append(Projected(
                lib.label, n, math.ceil(n / inputs.per_node), Band.of(with_err, steps_a),
                Band.of(inputs.batch * n / with_err, sps),
                Band.of(np.array(base) / with_err, np.array(base) / steps_a),
                Band.of(np.array(exposed)), int(np.median(ops)), Band.of(sps),
                tuple(float(x) for x in sps),
                {k: float(np.median([p.get(k, 0.0) for p in parts])) for k in keys},
                lib.kind))
    return out
