"""The published rows, each projected: what the model says of every published figure.

The two files of published results (hvd_vs_ddp/projection/data/published.csv: one library
each; data/head_to_head.csv: both libraries on the same cluster), read and checked as
`--rows` files are (`rows`, `h2h_rows`), and each row projected with the inputs' draws
only, no model error yet (`_single`, `_pair`; all of them once: `project_all`, kept on
disk between processes by hvd_vs_ddp/projection/row_cache.py). A row's model is traced
as `project --model` reads it (`_layout`); what the model is told about a row is its
configuration (CONFIG_FIELDS). The bands, errors and verdicts of each row, leave one
source out, and the goals: hvd_vs_ddp/projection/against_published.py.

    from hvd_vs_ddp.projection import published_rows
    published_rows.project_all()[0].values[0].bare   # a row's projected median
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

from hvd_vs_ddp.projection import architectures, interconnects, row_cache, rows_file
from hvd_vs_ddp.projection.layout import Layout, model_layout
from hvd_vs_ddp.projection.model import Inputs, Library, Links, project

DATA = Path(__file__).parent / "data" / "published.csv"
H2H = Path(__file__).parent / "data" / "head_to_head.csv"
DRAWS = 200
# what the model is told about a row (hvd_vs_ddp/projection/data/*.csv columns): rows
# equal in all of these are one configuration, repeated
CONFIG_FIELDS = ("source", "library", "model", "batch", "devices", "per_node", "intra",
                 "inter", "nics_per_node", "algorithm", "controller", "nccl_avg",
                 "ddp_bucket_mb", "bucket_mb", "fusion_mb", "cycle_ms", "ready_wait",
                 "optimizer", "unpinned", "grad_dtype", "reduce_after_backward")
# a row's optimizer implementation (`optimizer`: "foreach", torch >= 2.0's default on
# CUDA, or "loop"; empty: "loop", as the rows that predate torch 2.0 ran) and the
# libraries whose script loads unpinned: the
# main thread receives each batch from the workers and copies it from pageable memory
# (`unpinned`: "horovod", "ddp", "ddp horovod"; empty: none; terms.py 'pageable input',
# 'unpinned hand-off')
ROW_OPTIMIZER = "loop"


@dataclass
class Value:
    library: str
    published: float
    unit: str                     # "per_device" samples/s, or "efficiency"
    draws: np.ndarray             # projected, inputs only
    projected: tuple[float, float, float] = (0.0, 0.0, 0.0)  # with the model's error
    to_efficiency: float = 1.0    # x this = scaling efficiency (one device's compute / batch)

    @property
    def bare(self) -> float:
        return float(np.median(self.draws))

    @property
    def error(self) -> float:
        return self.projected[0] / self.published - 1

    @property
    def covered(self) -> bool:
        return self.projected[1] <= self.published <= self.projected[2]


@dataclass
class Row:
    id: str
    source: str
    devices: int
    model: str
    scope: str                    # "in", or "out: why"
    url: str
    config: tuple = ()            # CONFIG_FIELDS' values: rows with equal ones are repeats
    values: list[Value] = field(default_factory=list)
    ratio_published: float | None = None
    ratio_draws: np.ndarray | None = None
    ratio: tuple[float, float, float] = (0.0, 0.0, 0.0)   # the verdict's band (the truth)
    ratio_measurement: tuple[float, float, float] = (0.0, 0.0, 0.0)  # holds a figure
    verdict: str = ""             # projected, with its side: "faster (ddp)", "equivalent", ...
    published_verdict: str = ""   # this figure's own
    config_verdict: str = ""      # its configuration's repeats': firm, or "contradictory"

    @property
    def in_scope(self) -> bool:
        return self.scope == "in"

    @property
    def head_to_head(self) -> bool:
        return self.ratio_published is not None

    @property
    def agrees(self) -> bool:
        return self.verdict == self.published_verdict

    @property
    def agrees_with_config(self) -> bool:
        return self.verdict == self.config_verdict


def _config(row: dict) -> tuple:
    return tuple(row.get(k) or "" for k in CONFIG_FIELDS)


def rows(path: Path = DATA) -> list[dict]:
    """The single-library rows, read and checked as `--rows` files are."""
    return rows_file.read(path)


def h2h_rows(path: Path = H2H) -> list[dict]:
    """The head-to-head rows, read and checked as `--rows` files are."""
    return rows_file.read(path)


TRACE_BATCH = 8  # the batch a published transformer is traced at (_layout)


@cache
def _layout(model: str, batch: int, grad_bytes: int = 4, after: bool = False) -> Layout:
    """A row's model as `project --model` reads it: a torchvision classifier however a
    paper spells it ('ResNet-50'), a published transformer ('bert-large'), a workload.
    `grad_bytes`: bytes per gradient element the row's script reduces (column
    `grad_dtype`: 4 for fp32, the layout's own; 2 where the script casts the model to
    fp16 or bf16 and so reduces half-precision gradients). `after` (column
    `reduce_after_backward`): the script reduces every gradient in a step of its own once
    backward is over (NVIDIA's TensorFlow 2 BERT with gradient accumulation: the
    accumulated gradients, hvd.allreduce in `step()`), so none is ready before the end."""
    if architectures.find(model) is not None and batch != TRACE_BATCH:
        # a transformer's every operator is linear in the batch, so when backward makes
        # each gradient, as a fraction of backward, is the batch's own at any batch: one
        # trace per model (NVIDIA's rows come at twenty batches, 1-1.5 s a trace)
        one = _layout(model, TRACE_BATCH)
        k = batch / TRACE_BATCH
        lay = dataclasses.replace(one, forward_flops=one.forward_flops * k,
                                  backward_flops=one.backward_flops * k)
    else:
        lay = model_layout(model, batch)
    if grad_bytes == 4 and not after:
        return lay
    return dataclasses.replace(lay, grads=[dataclasses.replace(
        g, bytes=g.bytes * grad_bytes // 4, ready=1.0 if after else g.ready) for g in lay.grads])


def _inputs(row: dict, libs: list[Library]) -> Inputs:
    batch = int(row["batch"])
    one_node = int(row["devices"]) <= int(row["per_node"])
    links = Links(interconnects.get(row["intra"], "intra"),
                  None if one_node and not row.get("inter") else
                  interconnects.get(row["inter"], "inter"), int(row.get("nics_per_node") or 1),
                  row.get("algorithm") or "auto")
    return Inputs(_layout(row["model"], batch,
                          rows_file.GRAD_BYTES[row.get("grad_dtype") or "fp32"],
                          (row.get("reduce_after_backward") or "no") == "yes"), batch,
                  np.array([float(row["compute_ms"]) / 1000]), libs, links,
                  int(row["per_node"]), controller=row.get("controller") or "mpi",
                  nccl_avg=(row.get("nccl_avg") or "yes") == "yes",
                  gpu_ready_wait=(row.get("ready_wait") or "gpu") == "gpu",
                  optimizer=row.get("optimizer") or ROW_OPTIMIZER,
                  input_bytes=_input_bytes(row))


def _unpinned(row: dict) -> set[str]:
    return set((row.get("unpinned") or "").split())


def _input_bytes(row: dict) -> float:
    """One sample's input where a side copies it from pageable memory: an fp32 image
    crop, 3 x 224 x 224 (299 for Inception v3), as the published scripts feed it."""
    if not _unpinned(row):
        return 0.0
    side = 299 if "inception" in row["model"].lower() else 224
    return 3.0 * side * side * 4


def _single(row: dict, draws: int) -> Row:
    devices = int(row["devices"])
    if row["library"] == "ddp":
        lib = Library("ddp", "ddp", bucket_bytes=_setting(row, "bucket_mb") * 2**20)
    else:
        lib = Library("horovod", "horovod", fusion_bytes=_setting(row, "fusion_mb") * 2**20,
                      cycle_s=_setting(row, "cycle_ms") / 1000)
    inputs = _inputs(row, [lib])
    (p,) = project(inputs, [devices], draws=draws)
    sps = np.asarray(p.draws) / devices
    unit = "efficiency" if row.get("unit") == "scaling_efficiency" else "per_device"
    if unit == "efficiency":
        sps = sps * float(row["compute_ms"]) / 1000 / inputs.batch
    to_eff = 1.0 if unit == "efficiency" else float(row["compute_ms"]) / 1000 / inputs.batch
    return Row(row["id"], row.get("source") or "", devices, row["model"], "in",
               row.get("url") or "", _config(row),
               [Value(row["library"], float(row["published"]), unit, sps, to_efficiency=to_eff)])


# A row that leaves a library setting empty gets today's default (DDP's bucket_cap_mb,
# Horovod's HOROVOD_FUSION_THRESHOLD and HOROVOD_CYCLE_TIME since 0.21).
DEFAULTS = {"ddp_bucket_mb": 25.0, "bucket_mb": 25.0, "fusion_mb": 128.0, "cycle_ms": 1.0}


def _setting(row: dict, key: str) -> float:
    return float(row.get(key) or DEFAULTS[key])


def _pair(row: dict, draws: int) -> Row:
    devices = int(row["devices"])
    unpinned = _unpinned(row)
    libs = [Library("ddp", "ddp", bucket_bytes=_setting(row, "ddp_bucket_mb") * 2**20),
            Library("horovod", "horovod", fusion_bytes=_setting(row, "fusion_mb") * 2**20,
                    cycle_s=_setting(row, "cycle_ms") / 1000)]
    # each library's input copy as the study's scripts made it (by the table's label)
    libs = [dataclasses.replace(lib, pinned=lib.label not in unpinned) for lib in libs]
    d, h = project(_inputs(row, libs), [devices], draws=draws)
    out = Row(row["id"], row.get("source") or "", devices, row["model"],
              row.get("scope") or "in", row.get("url") or "", _config(row))
    dd, hh = np.asarray(d.draws) / devices, np.asarray(h.draws) / devices
    pd_, ph = float(row["ddp"]), float(row["horovod"])
    if (row.get("unit") or "samples_per_s") == "samples_per_s":
        to_eff = float(row["compute_ms"]) / 1000 / int(row["batch"])
        out.values = [Value("ddp", pd_ / devices, "per_device", dd, to_efficiency=to_eff),
                      Value("horovod", ph / devices, "per_device", hh, to_efficiency=to_eff)]
        out.ratio_published = ph / pd_
    else:  # times to the same result: the throughput ratio is their inverse
        out.ratio_published = pd_ / ph
    out.ratio_draws = hh / dd
    return out


@cache
def project_all(draws: int = DRAWS) -> tuple[Row, ...]:
    """Every published row projected once (inputs' draws only, no model error); kept on
    disk between processes (hvd_vs_ddp/projection/row_cache.py)."""
    return row_cache.cached("project_all", (draws,), lambda: tuple(
        [_single(r, draws) for r in rows()] + [_pair(r, draws) for r in h2h_rows()]))
