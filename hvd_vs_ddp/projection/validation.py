"""The validation's tables and its command: every published row, out of sample, the goals.

What is projected and how each row is judged (the two files of published rows, leave
one source out, configurations and their repeats, the goals):
hvd_vs_ddp/projection/against_published.py. This module writes it: the rows as text,
the Markdown tables docs/projection.md carries, projection.json's `validation` block
(as_json) and the goals' line.

    python -m hvd_vs_ddp.projection.validation             # every row and the three goals
    python -m hvd_vs_ddp.projection.validation --markdown  # as docs/projection.md carries it
    python -m hvd_vs_ddp.projection.validation --variants  # each way of carrying the error
    python -m hvd_vs_ddp.projection.validation --growth    # with the error grown by
                                   # extrapolation, as `project` carries it
    python -m hvd_vs_ddp.projection.validation --rows more.csv  # your own published rows
    python -m hvd_vs_ddp.projection.validation --term unpinned_handoff_us=550:1100
                                   # the goals with one term's range replaced (repeatable)

`--rows FILE`: further published rows, in head_to_head.csv's columns (or published.csv's,
with a `library` column), judged as new results are: projected with the model error of
every source in the repository (none of them is the file's), each row printed, then the
goals' figures over the file's rows alone. The columns it needs, the units and spellings
it takes: hvd_vs_ddp/projection/rows_file.py, which reads it; a library setting left
empty is today's default (published_rows.DEFAULTS). A file it cannot use is one line, exit 2.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from hvd_vs_ddp.common.cache import OFF as CACHE_OFF
from hvd_vs_ddp.common.errors import EXIT_BAD_INPUT
from hvd_vs_ddp.projection import MIN_DRAWS, rows_file, terms
from hvd_vs_ddp.projection.against_published import (
    GOAL,
    GOAL_AGREEMENT,
    GOAL_COVERAGE,
    error_split,
    judge_file,
    loso,
    summary,
    variants,
)
from hvd_vs_ddp.projection.published_rows import DRAWS, Row
from hvd_vs_ddp.run_model.margin import DEFAULT_MARGIN


def as_json(assessed: list[Row]) -> dict:
    """The validation as projection.json carries it."""
    rows = []
    for r in assessed:
        row = {"id": r.id, "source": r.source, "model": r.model, "devices": r.devices,
               "url": r.url, "in_scope": r.in_scope, "scope": r.scope,
               "values": [{"library": v.library, "unit": v.unit, "published": v.published,
                           "projected": list(v.projected), "error": v.error,
                           "covered": v.covered} for v in r.values]}
        if r.head_to_head:
            row.update(ratio_published=r.ratio_published, ratio=list(r.ratio),
                       ratio_measurement=list(r.ratio_measurement),
                       verdict=r.verdict, published_verdict=r.published_verdict,
                       config_verdict=r.config_verdict, agrees=r.agrees)
        rows.append(row)
    s = summary(assessed)
    return {**s, "summary_line": goals_line(s), "scale_line": scale_line(s), "rows": rows,
            "method": "leave one source out"}


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def markdown(assessed: list[Row], split: list[tuple[str, dict]] | None = None) -> str:
    s = summary(assessed)
    lines = ["Head-to-head rows (both libraries on the same cluster; per GPU samples/s; "
             "error = projected / published - 1, leave one source out; the verdict's band "
             "is about the true ratio, the measurement band must hold a published ratio; "
             "'repeats' is the verdict of the row's configuration, firm where its "
             "repeated figures agree):", "",
             "| row | GPUs | DDP published | DDP projected [95% band] | DDP error | Horovod "
             "published | Horovod projected [95% band] | Horovod error | ratio published | "
             "ratio projected [verdict band] | measurement band | projected verdict | "
             "published verdict | repeats | agree |",
             "| --- | ---: | ---: | --- | ---: | ---: | --- | ---: | ---: | --- | --- | --- "
             "| --- | --- | --- |"]
    for r in (r for r in assessed if r.head_to_head):
        v = {x.library: x for x in r.values}
        cells = []
        for lib in ("ddp", "horovod"):
            x = v.get(lib)
            cells += ([_fmt(x.published), f"{_fmt(x.projected[0])} [{_fmt(x.projected[1])}-"
                       f"{_fmt(x.projected[2])}]", f"{x.error:+.1%}"] if x else ["", "", ""])
        scope = "" if r.in_scope else " (out of scope)"
        m = r.ratio_measurement
        lines.append(f"| {r.id}{scope} | {r.devices} | " + " | ".join(cells) +
                     f" | {r.ratio_published:.3f} | {r.ratio[0]:.3f} [{r.ratio[1]:.3f}-"
                     f"{r.ratio[2]:.3f}] | [{m[1]:.3f}-{m[2]:.3f}] | {r.verdict} | "
                     f"{r.published_verdict} | {r.config_verdict} | "
                     f"{'yes' if r.agrees else 'no'}{' (not counted)' if not r.in_scope else ''} |")
    lines += ["", "Single-library rows:", "",
              "| row | library | model | GPUs | published | projected [95% band] | error |",
              "| --- | --- | --- | ---: | ---: | --- | ---: |"]
    for r in (r for r in assessed if not r.head_to_head):
        x = r.values[0]
        unit = "eff." if x.unit == "efficiency" else "/s per GPU"
        lines.append(f"| {r.id} | {x.library} | {r.model} | {r.devices} | {_fmt(x.published)} "
                     f"{unit} | {_fmt(x.projected[0])} [{_fmt(x.projected[1])}-"
                     f"{_fmt(x.projected[2])}] | {x.error:+.1%} |")
    if split:
        lines += ["", "The model error's parts (standard deviations of log residuals, "
                  "hvd_vs_ddp/projection/errors.py): total = the residuals' robust spread, "
                  "inputs = the draws' own, noise = repeats of one configuration, model = "
                  "what is left; a source's rows are projected with the line without it:",
                  "", "| estimated from | key | residuals | total | inputs | noise | model |",
                  "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
        for name, parts in split:
            for key, c in parts.items():
                lines.append(f"| {name} | {key} | {c['n']} | {c['total']:.1%} | "
                             f"{c['inputs']:.1%} | {c['noise']:.1%} | {c['model']:.1%} |")
    lines += ["", scale_line(s), "", goals_line(s)]
    return "\n".join(lines)


def scale_line(s: dict) -> str:
    """The goal at scale: each library's efficiency error in points at 256
    devices and more, leave one source out, and what it rests on."""
    a = s["at_scale"]
    g = a["goals"]
    parts = []
    for lib in ("ddp", "horovod"):
        x = a[lib]
        if not x["values"]:
            parts.append(f"{lib}: no published value at {g['devices']} devices or more")
            continue
        met = (x["median_points"] <= g["median_points"]
               and x["worst_points"] <= g["worst_points"])
        parts.append(f"{lib}: {x['values']} value(s) from {', '.join(x['sources'])}, median "
                     f"{x['median_points']:.1f} points, worst {x['worst_points']:.1f} "
                     f"({'met' if met else 'not met'})")
    return (f"At {g['devices']} devices and more, scaling efficiency error, leave one source "
            f"out (goals: median <= {g['median_points']:g} points, worst <= "
            f"{g['worst_points']:g}, per library): " + "; ".join(parts) + ".")


def _pct(x: float | None, fmt: str) -> str:
    """A share, or "none" where these rows hold no value to take it over."""
    return "none (no value)" if x is None else format(x, fmt)


def goals_line(s: dict, how: str = "Leave one source out") -> str:
    m = s["median_abs_error"]
    contra = len(s.get("contradictory_rows", []))
    return (f"{how}, over {s['head_to_head_rows']} head-to-head rows and "
            f"{s['values']} published values in scope: verdicts agree on "
            f"{s['verdict_agreement']:.0%} of the rows (goal {GOAL_AGREEMENT:.0%}; "
            f"{s['firm_verdicts']} firm projected verdicts, {s['firm_agree']} of them agree, "
            f"{s['inconclusive_verdicts']} inconclusive; the projected ratio's median alone "
            f"falls on the published side of the margin on "
            f"{s['median_point_agreement']:.0%}, and is off the published ratio by "
            f"{s['ratio_median_abs_error']:.1%} in the median); judged by their "
            f"configurations' repeats ({contra} rows contradictory, left out), they agree on "
            f"{s['config_agreement']:.0%} of {s['config_rows']} rows and in "
            f"{s['configurations_agree']} of {s['configurations']} configurations; median "
            f"absolute error DDP {_pct(m['ddp'], '.1%')}, Horovod "
            f"{_pct(m['horovod'], '.1%')} (goal {GOAL:.0%} each); the bands hold "
            f"{_pct(s['coverage'], '.0%')} of the published values (goal {GOAL_COVERAGE:.0%}) and "
            f"{s['ratio_coverage']:.0%} of the published ratios." + no_firm_line(s))


def no_firm_line(s: dict) -> str:
    """Where the agreement falls short because the bands carry the error's
    growth with the scale factor, which rows no firm verdict is possible on."""
    rows = s.get("inconclusive_rows", [])
    if s["verdict_agreement"] >= GOAL_AGREEMENT or not rows:
        return ""
    return (f" Below the agreement goal because no firm verdict is possible on "
            f"{len(rows)} rows from one device's compute time at their scale (the error "
            f"grown by extrapolation straddles the margin: {', '.join(rows[:4])}"
            f"{', ...' if len(rows) > 4 else ''}); of the firm verdicts "
            f"{s['firm_agree']} of {s['firm_verdicts']} agree.")


def _print_rows(assessed: list[Row]) -> None:
    for r in assessed:
        vals = "  ".join(f"{v.library} {v.published:.4g} vs {v.projected[0]:.4g} "
                         f"[{v.projected[1]:.4g}-{v.projected[2]:.4g}] {v.error:+.1%}"
                         for v in r.values)
        ratio = (f"  ratio {r.ratio_published:.3f} vs {r.ratio[0]:.3f} [{r.ratio[1]:.3f}-"
                 f"{r.ratio[2]:.3f}] {r.verdict} / {r.published_verdict} (repeats: "
                 f"{r.config_verdict})" if r.head_to_head else "")
        print(f"{r.id:44s} {vals}{ratio}{'' if r.in_scope else '  [out of scope]'}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hvd_vs_ddp.projection.validation",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--markdown", action="store_true", help="Markdown tables")
    ap.add_argument("--draws", type=int, default=DRAWS)
    ap.add_argument("--margin", type=float, default=DEFAULT_MARGIN)
    ap.add_argument("--variants", action="store_true",
                    help="the goal figures under each way of carrying the model's error")
    ap.add_argument("--growth", action="store_true",
                    help="bands with the model's error grown with the scale factor, fitted "
                    "by extrapolation without each row's source (python -m "
                    "hvd_vs_ddp.projection.extrapolation)")
    ap.add_argument("--rows", type=Path, help="a CSV of further published rows "
                    "(head_to_head.csv's columns), judged with the repository's error")
    ap.add_argument("--term", action="append", default=[], metavar="NAME=LOW:HIGH",
                    help="replace a term's range (its unit as `python -m "
                    "hvd_vs_ddp.projection.terms` lists it) and judge every row again: "
                    "how the goals move with it; nothing is kept on disk")
    args = ap.parse_args(argv)
    if args.draws < MIN_DRAWS:
        ap.error(f"--draws: at least {MIN_DRAWS} (a 95% band needs draws in both tails)")
    for spec in args.term:
        try:
            t = terms.set_range(spec)
        except ValueError as exc:
            ap.error(f"--term: {exc}")
        print(f"term {t.name}: {t.low:g}-{t.high:g} {t.unit} (replaced for this run)")
    if args.term:  # the kept rows were projected with the ranges in the code
        os.environ["HVD_VS_DDP_CACHE"] = CACHE_OFF
    if args.rows:
        try:
            judged = judge_file(args.rows, args.draws, args.margin)
        except rows_file.RowsError as exc:
            print(f"hvd-vs-ddp: error: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        _print_rows(judged)
        print(goals_line(summary(judged), f"The rows of {args.rows}, projected with the "
                         "model error of every source in the repository"))
        return 0
    if args.variants:
        print("| model error in the bands | verdicts agree (rows) | firm | inconclusive | "
              "agree, judged by repeats | values covered | ratios covered |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for name, s in variants(args.draws, args.margin):
            print(f"| {name} | {s['verdict_agreement']:.0%} | {s['firm_verdicts']} | "
                  f"{s['inconclusive_verdicts']} | {s['config_agreement']:.0%} of "
                  f"{s['config_rows']} | {s['coverage']:.0%} | {s['ratio_coverage']:.0%} |")
        return 0
    assessed = loso(args.draws, args.margin, growth=args.growth)
    split = error_split(args.draws)
    if args.markdown:
        print(markdown(assessed, split))
        return 0
    _print_rows(assessed)
    for name, parts in split:
        print(f"model error {name}: " + "; ".join(
            f"{k} total {c['total']:.1%} inputs {c['inputs']:.1%} noise {c['noise']:.1%} "
            f"model {c['model']:.1%}" for k, c in parts.items()))
    s = summary(assessed)
    print(scale_line(s))
    print(goals_line(s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
