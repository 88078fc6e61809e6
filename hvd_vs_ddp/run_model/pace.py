"""Each process's pace taken out of the verdicts: a covariate adjustment, gated.

On a shared or virtual host a fresh process keeps a pace for its whole life, and that
pace, not the library, is most of the spread between repetitions of a cell
(docs/methodology.md). Every rank process times a fixed piece of CPU work
(hvd_vs_ddp/harness/pace.py: `pre` before the backend is set up, `post` after the timed
rounds); a repetition's pace x is the mean over its ranks of (log pre + log median
post) / 2.

The adjustment (CUPED: Deng, Xu, Kohavi & Walker, WSDM 2013): each repetition's log
samples/s are shifted by -theta (x_rep - m), m the mean x over both sides of the pair;
the variance between repetitions falls by 1 - rho^2. theta is pooled per cell kind of
the run (run, series label, world size): within each series the repetitions' x and
log median samples/s are centred on the series' means, and theta is the least-squares
slope of the pooled points. It is refitted in every bootstrap replicate (the points
resampled), so the interval carries its uncertainty (hvd_vs_ddp/run_model/stats.py
`Shift`). A kind with fewer than MIN_POINTS repetitions, or no spread in x, gets no
theta, and its pairs keep the unadjusted reading.

The gate. A covariate the library itself moves would take part of the real difference
out: the post probes run beside the library's threads (Horovod's background thread
spins a core with the MPI controller), the pre probe beside the launcher's start-up. So
a pair uses the adjusted reading only when the library provably does not move the
probe: per repetition the drift d = log(post / pre) (mean over ranks; per post probe),
whose pace cancels, and the 95% two-level interval of exp(d) Horovod / exp(d) DDP lies
within ±PACE_MARGIN (2%). Why the drift and not probe(Horovod) / probe(DDP) itself: the
probe of a fresh process spreads as widely as its pace (8-18% here), so that ratio's
interval could only be within ±2% with a hundred processes a side; the drift is what a
library or launcher would move (one probe and not the other), and its spread is the
probe's own noise. Otherwise the pair keeps the unadjusted verdict, and says so.
The unadjusted figures stay in every pair: the adjustment is a second reading, never a
replacement.

    from hvd_vs_ddp.run_model import pace
    thetas = pace.fit_thetas(data.throughput)
    r = pace.reading(pace.arm(h), pace.arm(d), thetas, plan=None)
    r.ci, r.reading, r.gate.text
    python -m hvd_vs_ddp.run_model.pace RUN_DIR     # per kind: theta, rho, sd before/after
"""
from __future__ import annotations

import math
import sys
import zlib
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
import pandas as pd

from hvd_vs_ddp.run_model import stats
from hvd_vs_ddp.run_model.verdicts import interval

PACE_MARGIN = 0.02   # the gate: the library may move the probe's drift by less than this
MIN_POINTS = 4       # repetitions of a kind needed to fit its theta
ADJUSTED, UNADJUSTED = "adjusted", "unadjusted"


PROBES = ("pre", "post", "both")  # which probes make the covariate (module docstring: both)


def _rank_logs(probe: dict | None) -> list[tuple[float, list[float]]] | None:
    """Per rank (log pre, [log post...]); None when the repetition has no usable probe."""
    if not isinstance(probe, dict):
        return None
    out = []
    for r in probe.get("ranks") or []:
        pre, post = r.get("pre"), [p for p in r.get("post") or [] if p and p > 0]
        if not pre or pre <= 0 or not post:
            return None
        out.append((math.log(pre), [math.log(p) for p in post]))
    return out or None


def log_pace(probe: dict | None, which: str = "both") -> float:
    """A repetition's pace x: mean over ranks of (log pre + log median post) / 2 (`which`:
    "pre" or "post" for one probe alone, to compare them); NaN without a probe."""
    ranks = _rank_logs(probe)
    if ranks is None:
        return math.nan
    part = {"pre": lambda pre, post: pre, "post": lambda pre, post: float(np.median(post)),
            "both": lambda pre, post: (pre + float(np.median(post))) / 2}[which]
    return float(np.mean([part(pre, post) for pre, post in ranks]))


def drifts(probe: dict | None) -> list[float] | None:
    """A repetition's drift per post probe: log(post_j / pre), the mean over ranks."""
    ranks = _rank_logs(probe)
    if ranks is None or len({len(p) for _, p in ranks}) != 1:
        return None
    return [float(np.mean([post[j] - pre for pre, post in ranks]))
            for j in range(len(ranks[0][1]))]


@dataclass(frozen=True)
class Arm:
    """One side of a pair: its repetitions' samples/s, their probes and its kind."""
    reps: list
    probes: list
    kind: tuple


def arm(row: Any, pick: slice | None = None) -> Arm:
    """The arm of a pooled throughput row (run_model/frames.py), or of a slice of its
    repetitions (the A/A check's odd and even rounds)."""
    reps = list(row["rep_samples"]) if isinstance(row.get("rep_samples"), list) else [
        row["samples"]]
    probes = row.get("rep_pace_probe")
    probes = list(probes) if isinstance(probes, list) else [None] * len(reps)
    if pick is not None:
        reps, probes = reps[pick], probes[pick]
    return Arm(reps, probes, kind_of(row))


def kind_of(row: Any) -> tuple:
    return (row["run"], row["label"], int(row["world_size"]))


@dataclass(frozen=True)
class Theta:
    kind: tuple
    value: float
    samples: np.ndarray   # refitted per bootstrap replicate (stats.N_RESAMPLES)
    points: int           # repetitions
    series: int
    rho: float            # correlation of x and log samples/s, both centred per series
    sd_before: float      # sd of the centred log samples/s (between processes)
    sd_after: float       # the same after the adjustment

    def as_json(self) -> dict:
        return {"run": self.kind[0], "kind": list(self.kind[1:]), "theta": self.value,
                "points": self.points, "series": self.series, "rho": self.rho,
                "sd_before": self.sd_before, "sd_after": self.sd_after}


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    sxx = float(np.sum(x * x))
    return float(np.sum(x * y) / sxx) if sxx > 1e-12 else 0.0


def _log_rates(a: Arm) -> np.ndarray:
    """Each repetition's log median samples/s."""
    return np.array([math.log(float(np.median(s))) for s in a.reps], float)


def _centred(series: Iterable[tuple[Any, Any]]) -> tuple[np.ndarray, np.ndarray, int]:
    """Per series its repetitions' (x, y), each centred on the series' own means, pooled;
    a series with fewer than 2 repetitions or a value that is not finite is left out.
    Returns (x, y, the series kept)."""
    xs, ys = [], []
    for x, y in series:
        x, y = np.asarray(x, float), np.asarray(y, float)
        if len(x) < 2 or not (np.isfinite(x).all() and np.isfinite(y).all()):
            continue
        xs.append(x - x.mean())
        ys.append(y - y.mean())
    if not xs:
        return np.empty(0), np.empty(0), 0
    return np.concatenate(xs), np.concatenate(ys), len(xs)


def fit(kind: tuple, x: np.ndarray, y: np.ndarray, series: int,
        resamples: int = stats.N_RESAMPLES) -> Theta | None:
    """theta of one kind from its centred points; None when they cannot carry one."""
    if x.size < MIN_POINTS or float(np.sum(x * x)) <= 1e-12:
        return None
    value = _slope(x, y)
    rng = np.random.default_rng(stats.SEED + zlib.crc32(repr(kind).encode()))
    pick = rng.integers(0, x.size, size=(resamples, x.size))
    xb, yb = x[pick], y[pick]
    sxx = np.sum(xb * xb, axis=1)
    samples = np.where(sxx > 1e-12, np.sum(xb * yb, axis=1) / np.maximum(sxx, 1e-12), 0.0)
    rho = float(np.corrcoef(x, y)[0, 1]) if np.std(y) > 0 else 0.0
    dof = max(1, x.size - series)  # each series' own mean was taken out
    return Theta(kind, value, samples, int(x.size), series, rho,
                 float(np.sqrt(np.sum(y * y) / dof)),
                 float(np.sqrt(np.sum((y - value * x) ** 2) / max(1, dof - 1))))


def fit_thetas(tp: pd.DataFrame, which: str = "both") -> dict[tuple, Theta]:
    """theta per cell kind of the pooled throughput frame (run, label, world size);
    `which` probes make the covariate (the verdicts use both)."""
    out: dict[tuple, Theta] = {}
    if tp.empty or "rep_pace_probe" not in tp:
        return out
    keys = [kind_of(r) for _, r in tp.iterrows()]
    for kind in dict.fromkeys(keys):
        arms = [arm(r) for _, r in tp[[k == kind for k in keys]].iterrows()]
        x, y, series = _centred(([log_pace(p, which) for p in a.probes], _log_rates(a))
                                for a in arms)
        theta = fit(kind, x, y, series)
        if theta is not None:
            out[kind] = theta
    return out


@dataclass(frozen=True)
class Gate:
    passed: bool
    ci: stats.RatioCI | None   # exp(drift) of the numerator over the denominator's
    text: str


def gate(num: Arm, den: Arm, margin: float | None = None) -> Gate:
    """Whether the probe may adjust this pair (module docstring); margin: PACE_MARGIN."""
    margin = PACE_MARGIN if margin is None else margin
    got = [drifts(p) for p in num.probes], [drifts(p) for p in den.probes]
    if any(d is None for side in got for d in side):
        return Gate(False, None, "no pace probe in every repetition")
    dn = [np.exp(d) for d in got[0] if d is not None]
    dd = [np.exp(d) for d in got[1] if d is not None]
    if min(len(dn), len(dd)) < 2:
        return Gate(False, None, "the gate needs 2 or more repetitions a side")
    ci = stats.ratio_ci(dn, dd)
    inside = ci.lo >= 1 / (1 + margin) and ci.hi <= 1 + margin
    say = (f"probe drift ratio {ci.text()} {'within' if inside else 'not within'} "
           f"±{margin:.0%}")
    return Gate(inside, ci, say)


def _shift(x: np.ndarray, theta: Theta, n: int) -> stats.Shift:
    """One side's shifts from its repetitions' centred paces x."""
    return stats.Shift(theta.value * x, theta.samples[:n, None] * x[None, :])


@dataclass(frozen=True)
class Reading:
    ci: stats.RatioCI                  # the interval the verdict uses
    unadjusted: stats.RatioCI
    adjusted: stats.RatioCI | None
    gate: Gate
    why: str                           # why the adjusted reading was or was not used

    @property
    def reading(self) -> str:
        return ADJUSTED if self.ci.adjusted else UNADJUSTED

    def as_json(self) -> dict:
        def ci(c: stats.RatioCI | None) -> dict | None:
            return None if c is None else {"ratio": c.ratio, "lo": c.lo, "hi": c.hi}
        return {"reading": self.reading, "why": self.why, "unadjusted": ci(self.unadjusted),
                "adjusted": ci(self.adjusted), "gate": self.gate.text,
                "gate_passed": self.gate.passed}


def reading(num: Arm, den: Arm, thetas: dict[tuple, Theta], plan: dict | None = None
            ) -> Reading:
    """The pair's two readings and the one its verdict uses."""
    plain = interval(num.reps, den.reps, plan)
    g = gate(num, den)
    tn, td = thetas.get(num.kind), thetas.get(den.kind)
    if tn is None or td is None:
        return Reading(plain, plain, None, g, "no pace coefficient for "
                       + ("either side" if tn is None and td is None else
                          "one side") + f" (fewer than {MIN_POINTS} probed repetitions)")
    xn, xd = (np.array([log_pace(p) for p in a.probes], float) for a in (num, den))
    if not (np.isfinite(xn).all() and np.isfinite(xd).all()):  # e.g. run before probes
        return Reading(plain, plain, None, g, "unadjusted: not every repetition was probed")
    centre = float(np.mean(np.concatenate([xn, xd])))
    n = stats.N_RESAMPLES
    adjusted = interval(num.reps, den.reps, plan,
                        (_shift(xn - centre, tn, n), _shift(xd - centre, td, n)))
    if not g.passed:
        return Reading(plain, plain, adjusted, g, f"unadjusted: {g.text}")
    return Reading(adjusted, plain, adjusted, g, f"pace-adjusted: {g.text}")


COUNTERS = ("run_delay_s", "nonvoluntary_switches", "steal_s", "anon_huge_mb")


def _counter(probe: dict | None, key: str) -> float:
    """A repetition's counter over its timed rounds, summed over its ranks (NaN if any
    rank lacks it)."""
    ranks = (probe or {}).get("ranks") or []
    vals = [(r.get("process") or {}).get(key) for r in ranks]
    nums = [float(v) for v in vals if isinstance(v, (int, float))]
    return float(sum(nums)) if vals and len(nums) == len(vals) else math.nan


def sources(tp: pd.DataFrame) -> list[dict]:
    """What goes with a slow process: per counter the host exposes, its correlation with
    the repetitions' log samples/s, both centred per series (a negative rho: more of it
    in the slower processes), over the repetitions that have it."""
    out: list[dict] = []
    if tp.empty or "rep_pace_probe" not in tp:
        return out
    arms = [arm(r) for _, r in tp.iterrows()]
    rates = [_log_rates(a) for a in arms]
    for key in COUNTERS:
        x, y, _ = _centred(([_counter(p, key) for p in a.probes], rate)
                           for a, rate in zip(arms, rates))
        if x.size >= MIN_POINTS and np.std(x) > 0 and np.std(y) > 0:
            out.append({"counter": key, "rho": float(np.corrcoef(x, y)[0, 1]),
                        "repetitions": int(x.size)})
    return out


def compute_only_thetas(co: pd.DataFrame) -> dict[tuple, Theta]:
    """The same fit for the compute-only references (no library at all: each rank alone,
    all ranks at once), per (run, "compute-only", ranks), from their per-repetition
    rows: what the pace explains where nothing communicates."""
    out: dict[tuple, Theta] = {}
    if co.empty or "pace_probe" not in co:
        return out
    for (run, ranks), g in co.groupby(["run", "ranks"], sort=True):
        x, y, series = _centred(
            ([log_pace(p) for p in s["pace_probe"]],  # rate: the inverse of a step's time
             [-math.log(float(np.median(v))) for v in s["steps"]])
            for _, s in g.groupby(["workload", "knobs", "per_rank_batch"], sort=False))
        kind = (run, "compute-only", int(ranks))
        theta = fit(kind, x, y, series)
        if theta is not None:
            out[kind] = theta
    return out


def kinds_table(tp: pd.DataFrame, co: pd.DataFrame | None = None) -> list[dict]:
    """Per kind: theta, rho, the between-process sd before and after, points; the
    compute-only references (`co`: the compute_only frame) after the series."""
    thetas = [*fit_thetas(tp).values(),
              *(compute_only_thetas(co).values() if co is not None else [])]
    return [t.as_json() for t in thetas]


if __name__ == "__main__":
    from hvd_vs_ddp.run_model.disturbed import load_judged_run
    from hvd_vs_ddp.run_model.frames import build_frames

    data = build_frames([load_judged_run(p) for p in sys.argv[1:]])
    for row in kinds_table(data.throughput, data.compute_only):
        print(f"{' '.join(map(str, row['kind'])):28s} theta {row['theta']:+.2f} "
              f"rho {row['rho']:+.2f} sd {row['sd_before']:.3f} -> {row['sd_after']:.3f} "
              f"({row['points']} repetitions, {row['series']} series)")
    alone = {w: fit_thetas(data.throughput, w) for w in PROBES[:2]}
    for kind in fit_thetas(data.throughput):
        print(f"{' '.join(map(str, kind[1:])):28s} "
              + " ".join(f"rho {w} {alone[w][kind].rho:+.2f}" if kind in alone[w] else
                         f"rho {w} -" for w in PROBES[:2]))
