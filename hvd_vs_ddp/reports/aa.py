"""The A/A check: one backend, launcher and knob set measured as the two arms of a pair.

Where the answer is known (the arms are the same thing: the ratio is 1), a verdict of
"faster" for either arm is false. A run of the `aa` preset (`hvd-vs-ddp run --preset
aa`: ddp-gloo, ddp-mpi and Horovod over Gloo and MPI at 1 and 2 ranks, on mlp, gpt and
digits, throughput only, 6 repetitions) has every cell run in 6 rounds, each round
every cell once in a shuffled order. Here each throughput series is split by round:
arm A its 1st, 3rd and 5th repetitions, arm B its 2nd, 4th and 6th, so the two arms
are fresh processes interleaved exactly as two cells of a pair are, and each arm has
3 repetitions like the quick preset's cells. Every A/A pair is judged by the report's
own code (hvd_vs_ddp/run_model/verdicts.py `interval` and `judge`, margin 5%; in a run
with a budget, the sequential interval). Any run with 4 or more repetitions per cell works.

The compile axis: a compiled series (knobs "compile", docs/compile.md) is split the same
way, compiled arm against compiled arm (its case is labelled with its knob set, e.g.
"mlp [inductor]"), and the summary gives the compiled series' rates on a line of their
own: a run of the compile preset with `--repeat 4` or more gives A/A pairs eager and
compiled, each library, measured alike (a compiled repetition after the first
compiles into the cell's warm cache, so its timed steps are like any other's).

    python -m hvd_vs_ddp.reports.aa RUN_DIR... [--margin 0.05]   # the table, the rates
"""
from __future__ import annotations

import argparse
import math
import statistics

import pandas as pd

from hvd_vs_ddp.run_model import pace, verdicts
from hvd_vs_ddp.run_model.compile_pairs import EAGER, mode
from hvd_vs_ddp.run_model.disturbed import load_judged_run
from hvd_vs_ddp.run_model.frames import Data, build_frames


def aa_pairs(data: Data, margin: float = verdicts.DEFAULT_MARGIN) -> pd.DataFrame:
    """One row per throughput series with >= 4 repetitions: its odd rounds vs its even."""
    rows = []
    tp = data.throughput
    thetas = pace.fit_thetas(tp)
    for _, r in (tp.iterrows() if not tp.empty else iter(())):
        reps = list(r["rep_samples"]) if isinstance(r.get("rep_samples"), list) else []
        if len(reps) < 4:  # each arm needs 2+ repetitions (1: a within-run interval only)
            continue
        a, b = pace.arm(r, slice(0, None, 2)), pace.arm(r, slice(1, None, 2))
        read = pace.reading(a, b, thetas, r.get("plan"))  # the reading that counts
        ci = read.ci
        plain = verdicts.classify(read.unadjusted.lo, read.unadjusted.hi, margin)
        v = verdicts.judge(ci, margin, int(r["world_size"]), f"{r['series']} (A)",
                           f"{r['series']} (B)")
        rows.append({"run": r["run"], "case": r["case"], "series": r["series"],
                     "compile": mode(r),  # "eager", or the compile mode (compile axis)
                     "world_size": int(r["world_size"]),
                     "reps": f"{len(a.reps)}+{len(b.reps)}",
                     "ratio": ci.ratio, "lo": ci.lo, "hi": ci.hi, "verdict": v.verdict,
                     "false": v.verdict == verdicts.FASTER, "text": v.text(),
                     "reading": read.reading, "gate": read.gate.text,
                     "unadj_lo": read.unadjusted.lo, "unadj_hi": read.unadjusted.hi,
                     "unadj_verdict": plain,
                     "unadj_false": plain == verdicts.FASTER})
    return pd.DataFrame(rows)


def upper_bound(k: int, n: int, level: float = 0.95) -> float:
    """One-sided Clopper-Pearson upper bound of a rate seen k times in n (bisection)."""
    if n == 0:
        return 1.0
    if k >= n:
        return 1.0
    lo, hi = k / n, 1.0
    for _ in range(60):
        p = (lo + hi) / 2
        cdf = sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k + 1))
        lo, hi = (p, hi) if cdf > 1 - level else (lo, p)
    return hi


def summary(df: pd.DataFrame) -> list[str]:
    if df.empty:
        return ["no series with 4 or more repetitions: nothing to check"]
    out = [_rates("A/A pairs", df)]
    if "reading" in df and (df["reading"] == pace.ADJUSTED).any():  # the same, as measured
        plain = df.assign(verdict=df["unadj_verdict"], false=df["unadj_false"],
                          lo=df["unadj_lo"], hi=df["unadj_hi"], reading=pace.UNADJUSTED)
        out.append(_rates("  unadjusted reading", plain))
    compiled = df[df["compile"] != EAGER] if "compile" in df else df.iloc[:0]
    if not compiled.empty:  # the compile axis: its own line, eager's beside it
        out += [_rates("  eager", df[df["compile"] == EAGER]),
                _rates("  compiled", compiled)]
    return out


def _rates(what: str, df: pd.DataFrame) -> str:
    n, k = len(df), int(df["false"].sum())
    if n == 0:
        return f"{what}: none"
    eq = int((df["verdict"] == verdicts.EQUIVALENT).sum())
    width = statistics.median(df["hi"] / df["lo"])
    adjusted = int((df["reading"] == pace.ADJUSTED).sum()) if "reading" in df else 0
    return (f"{what}: {n}; false 'faster': {k} ({k / n:.0%}; 95% upper bound "
            f"{upper_bound(k, n):.0%}); equivalent: {eq} ({eq / n:.0%}); inconclusive: "
            f"{n - k - eq}; median interval width hi/lo {width:.3f}; pace-adjusted: "
            f"{adjusted} of {n}")


def table(df: pd.DataFrame) -> list[str]:
    out = ["| case | series | ranks | reps | ratio [95%] | verdict | reading | unadjusted |",
           "|---|---|---|---|---|---|---|---|"]
    for _, r in df.iterrows():
        out.append(f"| {r['case']} | {r['series']} | {r['world_size']} | {r['reps']} | "
                   f"{r['ratio']:.3f} [{r['lo']:.3f}-{r['hi']:.3f}] | {r['verdict']} | "
                   f"{r.get('reading', pace.UNADJUSTED)} | [{r.get('unadj_lo', r['lo']):.3f}-"
                   f"{r.get('unadj_hi', r['hi']):.3f}] {r.get('unadj_verdict', r['verdict'])} |")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hvd_vs_ddp.reports.aa", description=__doc__)
    ap.add_argument("run_dirs", nargs="+")
    ap.add_argument("--margin", type=float, default=verdicts.DEFAULT_MARGIN)
    args = ap.parse_args(argv)
    runs = [load_judged_run(p) for p in args.run_dirs]  # as the report does
    df = aa_pairs(build_frames(runs), verdicts.check_margin(args.margin))
    print("\n".join(table(df) + [""] + summary(df)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
