"""Every pair the run is judged on, as one flat list: what `run --budget` settles and what
the report's sections render.

Four kinds of pair, each judged by its own module of the run model (never anew here),
each with the cells whose repetitions feed the two arms:

- throughput: Horovod vs each DDP transport per case and world size
  (hvd_vs_ddp/run_model/pairs.py `hvd_vs_ddp`);
- compile:    a library compiled vs the same library eager (run_model/compile_pairs.py
  `pairs`; compiled Horovod vs compiled DDP is a throughput pair of the compiled case);
- tuning:     best Horovod vs best DDP over their knob sets (run_model/tuning_pairs.py
  `at_best`; the pair at defaults is a throughput pair of the "default" case). The
  best of each side is picked after measuring, so its cell may change from one look
  to the next; the pair keeps its name;
- recovery:   time to recover, Horovod Elastic vs each torch-side series
  (run_model/recovery_pairs.py `verdicts`; each trial is one repetition's value).

In a run with a budget every one of them is judged with the sequential interval at its
look (hvd_vs_ddp/run_model/verdicts.py `interval`).

    from hvd_vs_ddp.run_model.judged import judged_pairs
    for p in judged_pairs(data, margin=0.05): print(p.kind, p.name, p.verdict, p.cells)
    python -m hvd_vs_ddp.run_model.judged RUN_DIR [--margin 0.05]   # one line per pair
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

from hvd_vs_ddp.run_model import verdicts
from hvd_vs_ddp.run_model.compile_pairs import pairs
from hvd_vs_ddp.run_model.frames import Data
from hvd_vs_ddp.run_model.pairs import hvd_vs_ddp
from hvd_vs_ddp.run_model.recovery_pairs import frame as recovery_frame
from hvd_vs_ddp.run_model.recovery_pairs import plans_of
from hvd_vs_ddp.run_model.recovery_pairs import verdicts as recovery_verdicts
from hvd_vs_ddp.run_model.stats import LEVEL, RatioCI
from hvd_vs_ddp.run_model.tuning_pairs import at_best

KINDS = ("throughput", "compile", "tuning", "recovery")


@dataclass(frozen=True)
class Judged:
    kind: str                          # one of KINDS
    name: str                          # unique in a run; the budget's and report's label
    verdict: str                       # faster, equivalent, inconclusive
    ci: RatioCI                        # the interval the verdict came from (look, level)
    cells: tuple[tuple[str, ...], ...]  # the cell ids of each arm
    # whether the report's answer rests on it: per case and world size the best Horovod
    # against the best DDP (the answer box's pair), and each tuning best-vs-best pair
    headline: bool = False

    @property
    def open(self) -> bool:
        return self.verdict == verdicts.INCONCLUSIVE

    @property
    def all_cells(self) -> list[str]:
        return sorted({c for arm in self.cells for c in arm})


def ci_of(j: dict[str, Any]) -> RatioCI:
    """The interval back from a verdict's as_json() (tuning, recovery keep only that)."""
    return RatioCI(float(j["ratio"]), float(j["lo"]), float(j["hi"]),
                   int(j.get("repetitions") or 1), float(j.get("level") or LEVEL),
                   look=j.get("look"))


def throughput_name(r) -> str:
    return f"{r['case']} np{int(r['world_size'])} {r['horovod']} vs {r['ddp']}"


def _throughput(data: Data, margin: float) -> list[Judged]:
    cmp = hvd_vs_ddp(data.throughput, margin) if not data.throughput.empty else None
    if cmp is None or cmp.empty:
        return []
    return [Judged("throughput", throughput_name(r), r["judged"].verdict, r["judged"].ci,
                   ((r["hvd_cell"],), (r["ddp_cell"],)), headline=i in _headline_rows(cmp))
            for i, r in cmp.iterrows()]


def _headline_rows(cmp) -> set:
    """The rows of the answer box's pairs: per run, case and world size, the Horovod
    series and the DDP series of highest median samples/s (hvd_vs_ddp/reports/answer.py's "best
    Horovod / best DDP")."""
    rows = set()
    for _, g in cmp.groupby(["run", "case", "world_size"], sort=False):
        best_h = g.loc[g["hvd_sps"].idxmax(), "horovod"]
        best_d = g.loc[g["ddp_sps"].idxmax(), "ddp"]
        rows |= set(g.index[(g["horovod"] == best_h) & (g["ddp"] == best_d)])
    return rows


def _compile(data: Data, margin: float) -> list[Judged]:
    p = pairs(data, margin)
    return [] if p.empty else [
        Judged("compile", f"compile: {r['case']} np{int(r['world_size'])} {r['series']} "
                          f"{r['mode']} vs eager", r["verdict"], r["judged"].ci,
               ((r["cell"],), (r["eager_cell"],))) for _, r in p.iterrows()]


def _tuning(data: Data, margin: float) -> list[Judged]:
    out = []
    for e in at_best(data, margin):
        j, h, d = e.get("at_best"), e.get("best_horovod"), e.get("best_ddp")
        if j is None or not h or not d:
            continue
        out.append(Judged("tuning", f"tuning: {e['workload']} np{e['world_size']} best "
                                    "horovod vs best ddp", j["verdict"], ci_of(j),
                          ((h["cell"],), (d["cell"],)), headline=True))
    return out


def _recovery(data: Data, margin: float) -> list[Judged]:
    df = recovery_frame(data)
    out = []
    for p in recovery_verdicts(df, margin, plans_of(data)) if not df.empty else []:
        j = p.get("time_to_recover")
        if j is None:
            continue
        out.append(Judged("recovery", f"recovery: np{p['world_size']} {p['a']} vs {p['b']}",
                          j["verdict"], ci_of(j),
                          (tuple(p["cells"]["a"]), tuple(p["cells"]["b"]))))
    return out


def judged_pairs(data: Data, margin: float = verdicts.DEFAULT_MARGIN) -> list[Judged]:
    """Every pair the report judges, throughput first, then compile, tuning, recovery."""
    return [*_throughput(data, margin), *_compile(data, margin), *_tuning(data, margin),
            *_recovery(data, margin)]


def main(argv: list[str] | None = None) -> int:
    from hvd_vs_ddp.run_model.disturbed import load_judged_run
    from hvd_vs_ddp.run_model.frames import build_frames

    ap = argparse.ArgumentParser(prog="python -m hvd_vs_ddp.run_model.judged",
                                 description=__doc__)
    ap.add_argument("run_dir")
    ap.add_argument("--margin", type=float, default=verdicts.DEFAULT_MARGIN)
    args = ap.parse_args(argv)
    run = load_judged_run(args.run_dir)  # as the report does
    for p in judged_pairs(build_frames([run]), verdicts.check_margin(args.margin)):
        print(f"{p.kind:10} {p.verdict:12} {p.ci.text()} n={p.ci.reps} look={p.ci.look} "
              f"{p.name} [{' | '.join(','.join(a) for a in p.cells)}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
