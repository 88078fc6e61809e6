"""Hold the projection against published scaling results and print every row's error.

hvd_vs_ddp/projection/data/published.csv holds the rows, each with its source: the PyTorch DDP
benchmark README (ResNet-50/101, ResNeXt-50/101 at batch 32 on V100 DGX-1 machines,
4x100 Gb InfiniBand each, 2-16 GPUs, buckets of 25 MB and of 1 MB) and Horovod's
docs/benchmarks.rst (scaling efficiency at 512 GPUs over 25 Gb RoCE). Each row's
compute time is the published single-device figure named in `compute_source`; the
model, its layout and the links come from the row. Error = predicted / published - 1
of the per-device throughput (for an efficiency row, of the efficiency: the same
ratio, since both sides share the single-device compute).

The DDP paper (Li et al., VLDB 2020) gives its scaling as plots without tabulated
numbers; no values are read off its figures by eye, so it has no rows here.

    python -m hvd_vs_ddp.projection.validation            # the table and the median absolute error
    python -m hvd_vs_ddp.projection.validation --markdown # as docs/projection.md carries it
"""
from __future__ import annotations

import argparse
import csv
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from hvd_vs_ddp.projection import interconnects
from hvd_vs_ddp.projection.layout import Layout, torchvision_layout
from hvd_vs_ddp.projection.model import Inputs, Library, Links, project

DATA = Path(__file__).parent / "data" / "published.csv"
GOAL = 0.15  # median absolute error on throughput (issue 19)


@dataclass(frozen=True)
class Checked:
    id: str
    library: str
    model: str
    devices: int
    published: float
    predicted: float
    low: float
    high: float
    unit: str
    source: str

    @property
    def error(self) -> float:
        return self.predicted / self.published - 1


@cache
def _layout(model: str, batch: int) -> Layout:
    return torchvision_layout(model, batch)


def rows(path: Path = DATA) -> list[dict]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def check_row(row: dict, draws: int = 200) -> Checked:
    batch, devices = int(row["batch"]), int(row["devices"])
    compute_s = float(row["compute_ms"]) / 1000
    if row["library"] == "ddp":
        lib = Library("ddp", "ddp", bucket_bytes=float(row["bucket_mb"]) * 2**20)
    else:
        lib = Library("horovod", "horovod", fusion_bytes=float(row["fusion_mb"]) * 2**20,
                      cycle_s=float(row["cycle_ms"]) / 1000)
    links = Links(interconnects.get(row["intra"], "intra"),
                  interconnects.get(row["inter"], "inter"), int(row["nics_per_node"]),
                  row["algorithm"])
    inputs = Inputs(_layout(row["model"], batch), batch, np.array([compute_s]), [lib],
                    links, int(row["per_node"]))
    (p,) = project(inputs, [devices], draws=draws)
    if row["unit"] == "scaling_efficiency":
        band = p.efficiency
    else:
        band = type(p.samples_per_s)(*(v / devices for v in p.samples_per_s.as_list()))
    return Checked(row["id"], row["library"], row["model"], devices, float(row["published"]),
                   band.median, band.low, band.high, row["unit"], row["source"])


def check_all(path: Path = DATA, draws: int = 200) -> list[Checked]:
    return [check_row(r, draws) for r in rows(path)]


def median_abs_error(checked: list[Checked]) -> float:
    return float(np.median([abs(c.error) for c in checked]))


def markdown(checked: list[Checked]) -> str:
    lines = ["| row | library | model | devices | published | projected [95% band] | error |",
             "| --- | --- | --- | ---: | ---: | --- | ---: |"]
    for c in checked:
        unit = "eff." if c.unit == "scaling_efficiency" else "/s per GPU"
        lines.append(f"| {c.id} | {c.library} | {c.model} | {c.devices} | "
                     f"{c.published:.3g} {unit} | {c.predicted:.3g} [{c.low:.3g}-{c.high:.3g}] "
                     f"| {c.error:+.1%} |")
    lines.append("")
    lines.append(f"Median absolute error: {median_abs_error(checked):.1%} over {len(checked)} "
                 f"rows (goal: {GOAL:.0%} or less).")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hvd_vs_ddp.projection.validation",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--markdown", action="store_true", help="a Markdown table")
    ap.add_argument("--draws", type=int, default=200)
    args = ap.parse_args(argv)
    checked = check_all(draws=args.draws)
    if args.markdown:
        print(markdown(checked))
        return 0
    for c in checked:
        print(f"{c.id:38s} published {c.published:8.3g}  projected {c.predicted:8.3g} "
              f"[{c.low:.3g}-{c.high:.3g}]  error {c.error:+.1%}")
    print(f"median absolute error {median_abs_error(checked):.1%} over {len(checked)} rows "
          f"(goal {GOAL:.0%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
