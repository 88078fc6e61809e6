"""Do the verdicts survive a rerun? Compare the verdicts.json of independent runs.

For every Horovod/DDP pair (case, world size, a, b) found in every file: does each
run's 95% interval contain every other run's ratio, do two runs ever call opposite
sides faster, and do all runs give the same verdict? Prints a Markdown table and a
summary; with --check, exits 1 when coverage is below --min-coverage (default 0.75),
any pair flips side, or fewer than --min-same (default 0.90) of the pairs agree.

    hvd-vs-ddp report runs/a -o out/a/report.html    # ... and b, c
    python -m hvd_vs_ddp.reports.stability out/a/verdicts.json out/b/verdicts.json \
        out/c/verdicts.json [--check]

Reads only; bad input (a missing or corrupt file, fewer than two files) is one line
`hvd-vs-ddp: error: ...` and exit 2.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hvd_vs_ddp.common.errors import EXIT_BAD_INPUT, one_line
from hvd_vs_ddp.results_schema import ResultsError, read_json

FORMAT = "hvd-vs-ddp/verdicts"
Key = tuple[str, int, str, str]


@dataclass
class Row:
    key: Key
    pairs: list[dict[str, Any]]       # one per run, in the order given

    @property
    def calls(self) -> list[str]:
        """Each run's verdict as one word: '<faster series> faster', equivalent, ..."""
        return [f"{p['faster']} faster" if p["verdict"] == "faster" else p["verdict"]
                for p in self.pairs]

    def contained(self) -> tuple[int, int]:
        """(hits, checks): run i's interval holding run j's ratio, over all i != j."""
        hits = checks = 0
        for i, p in enumerate(self.pairs):
            for j, q in enumerate(self.pairs):
                if i != j:
                    checks += 1
                    hits += p["lo"] <= q["ratio"] <= p["hi"]
        return hits, checks

    @property
    def opposite(self) -> bool:
        sides = {p["faster"] for p in self.pairs if p["verdict"] == "faster"}
        return len(sides) > 1

    @property
    def same(self) -> bool:
        return len(set(self.calls)) == 1


def load(path: Path) -> dict[Key, dict[str, Any]]:
    doc = read_json(path, "a verdicts.json written by `hvd-vs-ddp report`")
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ResultsError(f"{path}: not a verdicts.json (format is not {FORMAT!r}).")
    try:
        return {(p["case"], int(p["world_size"]), p["a"], p["b"]): p for p in doc["pairs"]}
    except (KeyError, TypeError, ValueError) as err:
        raise ResultsError(f"{path}: pairs are malformed ({err!r}); expected the fields "
                           "of docs/verdicts-format.md.") from None


def rows(docs: list[dict[Key, dict[str, Any]]]) -> list[Row]:
    common = set(docs[0]).intersection(*docs[1:])
    return [Row(k, [d[k] for d in docs]) for k in sorted(common)]


def summary(table: list[Row]) -> dict[str, Any]:
    hits = sum(r.contained()[0] for r in table)
    checks = sum(r.contained()[1] for r in table)
    return {"pairs": len(table), "coverage": hits / checks if checks else float("nan"),
            "hits": hits, "checks": checks, "opposite": sum(r.opposite for r in table),
            "same": sum(r.same for r in table)}


def markdown(table: list[Row], names: list[str]) -> str:
    head = "| case | ranks | a / b | " + " | ".join(names) + " | contained | same |"
    lines = [head, "|" + "---|" * (5 + len(names))]
    for r in table:
        case, ws, a, b = r.key
        cells = [f"{p['ratio']:.3f} [{p['lo']:.3f}-{p['hi']:.3f}] {call}"
                 for p, call in zip(r.pairs, r.calls)]
        hits, checks = r.contained()
        flag = "yes" if r.same else ("OPPOSITE" if r.opposite else "no")
        lines.append(f"| {case} | {ws} | {a} / {b} | " + " | ".join(cells)
                     + f" | {hits}/{checks} | {flag} |")
    s = summary(table)
    lines += ["", f"{s['pairs']} pairs in all {len(names)} runs; intervals contained the "
              f"other runs' ratios in {s['hits']}/{s['checks']} = {s['coverage']:.0%} of "
              f"checks; {s['opposite']} pair(s) called opposite sides faster; "
              f"{s['same']}/{s['pairs']} = {s['same'] / max(s['pairs'], 1):.0%} got the "
              "same verdict in every run."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hvd_vs_ddp.reports.stability",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("verdicts", nargs="+", type=Path, help="verdicts.json of each run")
    ap.add_argument("--check", action="store_true", help="exit 1 below the thresholds")
    ap.add_argument("--min-coverage", type=float, default=0.75)
    ap.add_argument("--min-same", type=float, default=0.90)
    args = ap.parse_args(argv)
    try:
        if len(args.verdicts) < 2:
            raise ResultsError("give at least two verdicts.json files, one per run.")
        docs = [load(p) for p in args.verdicts]
    except ResultsError as err:
        print(f"hvd-vs-ddp: error: {one_line(err)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    table = rows(docs)
    if not table:
        print("hvd-vs-ddp: error: no Horovod/DDP pair is in every file.", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(markdown(table, [p.parent.name or str(p) for p in args.verdicts]))
    s = summary(table)
    ok = (s["coverage"] >= args.min_coverage and not s["opposite"]
          and s["same"] >= args.min_same * s["pairs"])
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
