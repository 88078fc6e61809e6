"""How often a verdict is wrong: the report's statistics run on pairs whose answer is known.

Each simulated pair has two arms built from REAL noise shapes (recorded runs, by default
tests/fixtures/runs: every throughput series with two or more repetitions): a
repetition's offset is drawn from the series' repetition-level offsets (log of a
repetition's median minus the series' mean), its steps from the residuals of steps
about their repetition's median; with `rep_sd`/`step_sd` given, the pooled shapes are
standardised and scaled to those spreads (log scale), else one recorded series per pair
is used as recorded. Arm A is arm B's level times the known ratio. Both arms go through
the report's own code: the two-level bootstrap (hvd_vs_ddp/run_model/stats.py) and the
margin's classification (hvd_vs_ddp/run_model/margin.py). Three designs:

- fixed:     the planned repetitions, one look at 95% (`run --repeat N`);
- spending:  the budget's looks, one more repetition per arm per look up to `max_reps`,
             stopping at the first firm verdict, each look at its spent level
             (stats.sequential_ci: run --budget);
- naive:     the same looks, each at 95% (the mutation the budget must not be: a
             repeated look inflates the error; tests/unit/test_verdict_sim.py keeps it).

Truth, with margin m: "faster" (the right side) when the ratio lies outside
[1/(1+m), 1+m], else "equivalent". A ratio ON an edge (1.05 at ±5%) is where a
procedure's error is largest: either firm verdict there should come at most about
alpha/2 of the time.

    from hvd_vs_ddp.run_model.verdict_sim import Shapes, simulate
    rows = simulate(Shapes.from_runs([Path("tests/fixtures/runs")]), ratios=(1.0, 0.9))
    python benchmarks/verdict_simulation.py --trials 400     # the tables in docs/methodology.md
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from hvd_vs_ddp.common.run_layout import MANIFEST
from hvd_vs_ddp.results_schema.errors import ResultsError
from hvd_vs_ddp.run_model import stats
from hvd_vs_ddp.run_model.disturbed import load_judged_run
from hvd_vs_ddp.run_model.margin import DEFAULT_MARGIN, EQUIVALENT, FASTER, INCONCLUSIVE, classify

DESIGNS = ("fixed", "spending", "naive")


@dataclass
class Shapes:
    """Per recorded series: its repetition offsets and its step residuals (log scale)."""
    offsets: list[np.ndarray] = field(default_factory=list)
    residuals: list[np.ndarray] = field(default_factory=list)
    steps: int = 10  # timed steps per repetition (the quick preset: 5 rounds of 2)

    @classmethod
    def from_runs(cls, roots: Iterable[Path]) -> "Shapes":
        """Every throughput series with >= 2 repetitions of every run under `roots`."""
        series: dict[tuple, dict[int, np.ndarray]] = {}
        for root in roots:
            for run_dir in sorted({p.parent for p in Path(root).rglob(MANIFEST)}):
                try:
                    run = load_judged_run(run_dir)
                except ResultsError:
                    continue
                for cell in run.cells:
                    for b in cell.benchmarks:
                        vals = getattr(b.record, "samples_per_s", None)
                        if b.kind == "throughput" and vals:
                            key = (run_dir, cell.id, b.name.split("[")[-1])
                            series.setdefault(key, {})[b.rep] = np.log(np.asarray(vals, float))
        out = cls()
        for reps in series.values():
            if len(reps) < 2:
                continue
            meds = np.array([np.median(v) for v in reps.values()])
            out.offsets.append(meds - meds.mean())
            out.residuals.append(np.concatenate([v - np.median(v) for v in reps.values()]))
        if not out.offsets:
            raise ValueError(f"no throughput series with 2+ repetitions under {list(roots)}")
        return out

    def draw(self, rng: np.random.Generator, reps: int, rep_sd: float | None,
             step_sd: float | None, series: int = 0) -> list[np.ndarray]:
        """One arm: `reps` repetitions of `steps` log values about 0 (as recorded: those
        of recorded series number `series`; both arms of a pair take the same one)."""
        if rep_sd is None or step_sd is None:  # one recorded series, as recorded
            offs, res = self.offsets[series], self.residuals[series]
        else:
            offs = np.concatenate([o / o.std() for o in self.offsets if o.std() > 0]) * rep_sd
            res = np.concatenate([r / r.std() for r in self.residuals if r.std() > 0]) * step_sd
        return [rng.choice(offs) + rng.choice(res, self.steps) for _ in range(reps)]


def truth(ratio: float, m: float) -> tuple[str, str | None]:
    """(verdict, faster side 'a'/'b' or None) that a ratio a/b deserves at margin m."""
    if ratio > 1 + m or ratio < 1 / (1 + m):
        return FASTER, ("a" if ratio > 1 else "b")
    return EQUIVALENT, None


def _verdict(ci: stats.RatioCI, m: float) -> tuple[str, str | None]:
    v = classify(ci.lo, ci.hi, m)
    return v, (("a" if ci.ratio > 1 else "b") if v == FASTER else None)


def naive_ci(num, den, planned: int, max_reps: int, resamples: int = stats.N_RESAMPLES,
             seed: int = stats.SEED) -> stats.RatioCI:
    """The mutation: every look at the fixed design's 95% (no error spent per look)."""
    n = min(len(num), len(den))
    return stats.ratio_ci(num[:n], den[:n], resamples=resamples, seed=seed)


Interval = Callable[..., stats.RatioCI]


def one_pair(a: Sequence[np.ndarray], b: Sequence[np.ndarray], planned: int, m: float,
             interval: Interval | None, resamples: int, seed: int
             ) -> tuple[str, str | None, int]:
    """(verdict, side, repetitions used): looks at planned, planned+1, ... len(a) reps,
    stopping at the first firm verdict; interval None: the fixed design (one look)."""
    if interval is None:
        ci = stats.ratio_ci(list(a[:planned]), list(b[:planned]), resamples=resamples,
                            seed=seed)
        return (*_verdict(ci, m), planned)
    for n in range(planned, len(a) + 1):
        ci = interval(list(a[:n]), list(b[:n]), planned, len(a), resamples=resamples,
                      seed=seed)
        v, side = _verdict(ci, m)
        if v != INCONCLUSIVE:
            return v, side, n
    return INCONCLUSIVE, None, len(a)


@dataclass
class Rates:
    design: str
    ratio: float
    trials: int
    counts: dict[str, int]  # "faster a", "faster b", "equivalent", "inconclusive"
    reps: float             # mean repetitions per arm used
    margin: float = DEFAULT_MARGIN

    def share(self, key: str) -> float:
        return self.counts.get(key, 0) / self.trials

    @property
    def right(self) -> float:
        v, side = truth(self.ratio, self.margin)
        return self.share(f"faster {side}" if v == FASTER else EQUIVALENT)

    @property
    def false_faster(self) -> float:
        """Any "faster" the truth does not support (either side when it is equivalent,
        the wrong side when it is not)."""
        v, side = truth(self.ratio, self.margin)
        wrong = [s for s in "ab" if v != FASTER or s != side]
        return sum(self.share(f"faster {s}") for s in wrong)

    @property
    def false_equivalent(self) -> float:
        return self.share(EQUIVALENT) if truth(self.ratio, self.margin)[0] == FASTER else 0.0

    @property
    def firm(self) -> float:
        return 1 - self.share(INCONCLUSIVE)


def simulate(shapes: Shapes, ratios: Sequence[float] = (0.90, 0.95, 1.00, 1.05),
             designs: Sequence[str] = DESIGNS, trials: int = 200, planned: int = 3,
             max_reps: int = 9, rep_sd: float | None = 0.03, step_sd: float | None = 0.05,
             margin: float = DEFAULT_MARGIN, resamples: int = stats.N_RESAMPLES,
             seed: int = 2026, intervals: dict[str, Interval | None] | None = None
             ) -> list[Rates]:
    """Rates per (design, ratio). The same simulated pairs go through every design.
    `intervals` maps a design to its look's interval (None: fixed); the defaults are
    fixed, spending (stats.sequential_ci) and naive (naive_ci)."""
    rules: dict[str, Interval | None] = {"fixed": None, "spending": stats.sequential_ci,
                                         "naive": naive_ci, **(intervals or {})}
    out = []
    for ratio in ratios:
        rng = np.random.default_rng([seed, int(round(ratio * 1e4))])
        tallies: dict[str, tuple[dict[str, int], list[int]]] = {d: ({}, []) for d in designs}
        for t in range(trials):
            i = int(rng.integers(len(shapes.offsets))) if rep_sd is None else 0
            a = [x + np.log(ratio) for x in shapes.draw(rng, max_reps, rep_sd, step_sd, i)]
            b = shapes.draw(rng, max_reps, rep_sd, step_sd, i)
            a, b = [np.exp(x) for x in a], [np.exp(x) for x in b]
            for d in designs:
                v, side, n = one_pair(a, b, planned, margin, rules[d], resamples, seed + t)
                key = f"faster {side}" if v == FASTER else v
                counts, used = tallies[d]
                counts[key] = counts.get(key, 0) + 1
                used.append(n)
        out += [Rates(d, ratio, trials, c, float(np.mean(u)), margin)
                for d, (c, u) in tallies.items()]
    return out


def table(rows: Sequence[Rates]) -> list[str]:
    """Markdown rows: design, ratio, shares of each verdict, right/false rates, reps."""
    head = ["| design | true ratio | faster (right side) | faster (wrong side) | equivalent | "
            "inconclusive | right | false faster | false equivalent | reps per arm |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    lines = []
    for r in rows:
        v, side = truth(r.ratio, r.margin)
        good = r.share(f"faster {side}") if side else 0.0
        bad = r.share("faster a") + r.share("faster b") - good
        lines.append(f"| {r.design} | {r.ratio:.2f} | {good:.1%} | {bad:.1%} | "
                     f"{r.share(EQUIVALENT):.1%} | {r.share(INCONCLUSIVE):.1%} | "
                     f"{r.right:.1%} | {r.false_faster:.1%} | {r.false_equivalent:.1%} | "
                     f"{r.reps:.1f} |")
    return head + lines
