"""Records of suites/test_convergence.py: convergence and time_to_accuracy.

convergence: per-step global losses of a backend and of the `single` reference on
the same global batches (equal lengths), their largest relative deviation and the
tolerance; wall_times / reference_wall_times are cumulative seconds at each step
(reference_wall_times since format version 2; optional when read). The weight check
(optional, absent from older files): whether every rank held the same weights bitwise
after training, and the relative L2 deviation of those weights (all parameters
together) from the reference's, with its tolerance (null when not finite).
time_to_accuracy: training seconds and steps until held-out accuracy reached
`target` (both null when it never did), with the evaluated curve.

    rec = ConvergenceRecord.from_dict(info, where="cells/a.json: benchmark 'x'")
    rec.rows()[0]["losses"]          # numpy array
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hvd_vs_ddp.results_schema.fields import (
    Invalid,
    flag,
    integer,
    listof,
    mapping,
    nullable,
    number,
    opt,
    req,
    text,
)
from hvd_vs_ddp.results_schema.kinds.base import BenchmarkRecord, array

_losses = listof(number(), nonempty=True)
_cumulative = listof(number(0))


@dataclass(kw_only=True)
class ConvergenceRecord(BenchmarkRecord):
    KIND, SUITE, FRAME = "convergence", "convergence", "convergence"

    workload: str = req(text)
    losses: list[float] = req(_losses)
    reference_losses: list[float] = req(_losses)
    max_rel_dev: float = req(number(0))
    tolerance: float = req(number(0))
    within_tolerance: bool = req(flag)
    workload_params: dict[str, Any] | None = opt(mapping)
    per_rank_batch: int | None = opt(integer(1))
    global_batch: int | None = opt(integer(1))
    steps: int | None = opt(integer(0))
    wall_times: list[float] | None = opt(_cumulative)
    reference_wall_times: list[float] | None = opt(_cumulative)
    weights_equal_across_ranks: bool | None = opt(flag)
    weight_rel_dev: float | None = opt(nullable(number(0)))
    weight_tolerance: float | None = opt(number(0))

    def consistency(self) -> None:
        if len(self.reference_losses) != len(self.losses):
            raise Invalid("reference_losses", f"has {len(self.reference_losses)} values; "
                          f"expected {len(self.losses)} (one per step, like losses)")

    def rows(self) -> list[dict[str, Any]]:
        return [{**self.common_row(), "workload": self.workload,
                 "losses": array(self.losses), "reference_losses": array(self.reference_losses),
                 "wall_times": array(self.wall_times),
                 "reference_wall_times": array(self.reference_wall_times),
                 "steps": int(self.steps or len(self.losses)),
                 "max_rel_dev": float(self.max_rel_dev), "tolerance": float(self.tolerance),
                 "within": bool(self.within_tolerance),
                 "weights_equal": self.weights_equal_across_ranks,
                 "weight_rel_dev": (float("nan") if self.weight_rel_dev is None
                                    else float(self.weight_rel_dev)),
                 "weight_tolerance": self.weight_tolerance}]


@dataclass(kw_only=True)
class GanConvergenceRecord(ConvergenceRecord):
    """The two-optimizer GAN workload's losses against `single` (suites/test_gan.py):
    the fields and frame rows of a convergence record, from the `gan` suite."""
    KIND, SUITE, FRAME = "gan_convergence", "gan", "convergence"


def _curve_point(v: Any, name: str, finite: bool) -> None:
    listof(number(), length=3)(v, name, finite)


@dataclass(kw_only=True)
class TimeToAccuracyRecord(BenchmarkRecord):
    KIND, SUITE, FRAME = "time_to_accuracy", "convergence", "tta"

    workload: str = req(text)
    target: float = req(number(0))
    reached: bool = req(flag)
    seconds: float | None = req(nullable(number(0)))
    steps: int | None = req(nullable(integer(0)))
    workload_params: dict[str, Any] | None = opt(mapping)
    global_batch: int | None = opt(integer(1))
    curve: list[list[float]] | None = opt(listof(_curve_point))   # [step, seconds, accuracy]
    wall_seconds: float | None = opt(number(0))

    def consistency(self) -> None:
        for name in ("seconds", "steps"):
            if (getattr(self, name) is not None) != self.reached:
                want = "a value" if self.reached else "null"
                raise Invalid(name, f"is {getattr(self, name)!r} while reached is "
                              f"{str(self.reached).lower()}; expected {want}")

    def rows(self) -> list[dict[str, Any]]:
        return [{**self.common_row(), "workload": self.workload, "target": float(self.target),
                 "reached": bool(self.reached), "seconds": self.seconds, "steps": self.steps,
                 "curve": self.curve or []}]
