"""build_report: run directories -> one self-contained HTML file, a Markdown summary
and verdicts.json.

The Markdown is written beside the HTML with the same stem (report.html ->
report.md) and references its figures as PNG files in <stem>_figures/ beside it.
verdicts.json (docs/verdicts-format.md) is written beside them: the answer per case
and world size and every pairwise verdict, for other tools and CI.
Run directories are only read: an output path inside one of them is refused, and so is
any path holding a file this report did not write earlier: every output passes the
output gate (hvd_vs_ddp/common/outputs.py) before anything is read or written. The HTML
and Markdown carry a marker (an HTML comment naming the runs they report), the figures
a PNG text chunk, verdicts.json its `format` and `inputs`, so a report may replace its
own earlier self (the same runs) and nothing else.
The outputs are written together (hvd_vs_ddp.results_schema.io.write_files_atomic): every file
to a temporary sibling first, and only when all of them are written are they moved
into place (os.replace), so a full disk or an interruption never leaves a half-written
report or a report whose figures belong to another; a failed write raises WriteError
("writing PATH: No space left on device") and the previous report stays as it was.
A passed cell whose results file cannot be read is listed as "unreadable" (Failed
cells, the answer box, verdicts.json) and the rest is reported; ReportPaths.unreadable
lists those cells, and the CLI then exits 3.

    from hvd_vs_ddp.reports import build_report
    paths = build_report([Path("runs/a"), Path("runs/b")], Path("out/report.html"),
                         margin=0.05)
    python -m reports runs/a runs/b -o out/report.html
"""
from __future__ import annotations

import contextlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from hvd_vs_ddp.common import output_formats, outputs
from hvd_vs_ddp.common.outputs import Output
from hvd_vs_ddp.reports import budget_section, compare, cost, tables
from hvd_vs_ddp.reports.answer import answers, verdicts_doc, where_it_holds
from hvd_vs_ddp.reports.compiled_section import answer_sentences
from hvd_vs_ddp.reports.context import ReportContext, report_context
from hvd_vs_ddp.reports.errors import ReportError
from hvd_vs_ddp.reports.render import Section, render_html, render_markdown
from hvd_vs_ddp.reports.sections import build_sections
from hvd_vs_ddp.results_schema import write_files_atomic
from hvd_vs_ddp.run_model import verdicts
from hvd_vs_ddp.run_model.disturbed import load_judged_run
from hvd_vs_ddp.run_model.load import Run

TITLE = "Horovod or DDP? Benchmark report"
_OURS = re.compile(r"^(throughput|scaling_efficiency|step_times|loss|busbw|exposed_comm|"
                   r"where_step_goes|recovery_timeline|input_cpu|monitor_\d+)\.png$")


@dataclass
class ReportPaths:
    html: Path
    markdown: Path
    figures_dir: Path
    figures: list[Path] = field(default_factory=list)
    verdicts: Path | None = None
    unreadable: list[str] = field(default_factory=list)  # "run: cell: reason", one each


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def report_inputs(run_dirs: list[Path]) -> tuple[str, ...]:
    """What a report is made from, as its marker records it: the runs, resolved."""
    return tuple(str(Path(d).resolve()) for d in run_dirs)


def output_paths(run_dirs: list[Path], out: Path) -> tuple[Path, Path, Path, Path]:
    out = Path(out)
    if out.is_dir():
        out = out / "report.html"
    if out.suffix.lower() not in (".html", ".htm"):
        raise ReportError(f"{out}: the output must be an .html path (the Markdown goes "
                          "beside it with the same stem), e.g. -o report.html.")
    html = out.resolve()
    md, figdir = html.with_suffix(".md"), html.with_name(html.stem + "_figures")
    vjson = html.with_name("verdicts.json")
    for d in run_dirs:
        root = Path(d).resolve()
        if any(_inside(p, root) for p in (html, md, figdir, vjson)):
            raise ReportError(f"{out}: lies inside the results directory {d}; write the "
                              "report elsewhere so outputs never mix with results.")
    outputs.check_name(figdir)  # <stem>_figures: the longest name the report makes
    if figdir.exists() and not figdir.is_dir():
        raise ReportError(f"{figdir}: exists and is not a folder; the report's figures go "
                          "there (choose another -o)")
    inputs = report_inputs(run_dirs)
    outputs.check([Output(html, output_formats.REPORT_HTML, inputs),
                   Output(md, output_formats.REPORT_MD, inputs),
                   Output(vjson, output_formats.VERDICTS, inputs)])  # before any work
    return html, md, figdir, vjson


def _names(run_dirs: list[Path]) -> list[str]:
    names = [Path(d).resolve().name for d in run_dirs]
    if len(set(names)) < len(names):
        names = ["/".join(Path(d).resolve().parts[-2:]) for d in run_dirs]
    if len(set(names)) < len(names):
        names = [f"{n}#{i + 1}" for i, n in enumerate(names)]
    return names


def _subtitle(runs: list[Run], holds: list[str]) -> list[str]:
    """The header's "label: value" lines (a definition list in the HTML): each run, its
    versions, and where its answers hold."""
    out = []
    for i, r in enumerate(runs):
        m = r.manifest
        tag = ("Run" if len(runs) == 1 else
               f"Run {'AB'[i]}" if len(runs) == 2 else f"Run {i + 1}")
        ver = ", ".join(f"{k} {tables.plain(v)}" for k, v in (m.versions or {}).items() if v)
        done = "" if m.complete else " — INCOMPLETE run"
        out.append(f"{tag}: {r.name} (preset {m.preset or '?'}, started "
                   f"{m.started or '?'}, git {str(m.git_commit or '?')[:12]}){done}")
        if ver:
            out.append(f"Versions{tag[3:]}: {ver}")
    return out + [f"Conditions: {h}" for h in holds]


def _settings(margin: float, price_per_device_hour: float | None,
              epoch_samples: int) -> tuple[float, float | None, int]:
    try:
        return (verdicts.check_margin(margin), cost.check_price(price_per_device_hour),
                cost.check_epoch_samples(epoch_samples))
    except ValueError as err:
        raise ReportError(str(err)) from None


def _run_dirs(run_dirs: list[Path]) -> list[Path]:
    run_dirs = [Path(d) for d in run_dirs]
    if not run_dirs:
        raise ReportError("no run directory given; pass one or more directories written by "
                          "`hvd-vs-ddp run`.")
    first: dict[Path, Path] = {}
    for d in run_dirs:  # a run against itself: a before/after of nothing
        if first.setdefault(d.resolve(), d) is not d:
            raise ReportError(f"{d}: this run directory is given twice (also as "
                              f"{first[d.resolve()]}); give each run once (two runs make a "
                              "before/after comparison)")
    return run_dirs


def _load(run_dirs: list[Path], keep_disturbed: bool) -> list[Run]:
    return [load_judged_run(d, n, keep=keep_disturbed)
            for d, n in zip(run_dirs, _names(run_dirs))]


def _headlines(ctx: ReportContext) -> list[str]:
    """The answer box: every answer sentence, the budget in one short line (its pairs in
    the Budget section); where the answers hold goes to the header (_subtitle)."""
    data, cmp, margin = ctx.data, ctx.cmp, ctx.margin
    return compare.headlines(data, cmp, ctx.before_after, margin,
                             [a["sentence"] for a in answers(data, cmp, margin)]
                             + answer_sentences(data, cmp, margin)
                             + ctx.recovery.headlines,
                             budget=budget_section.short_lines(data.runs))


def _files(ctx: ReportContext, sections: list[Section], run_dirs: list[Path],
           html_path: Path, md_path: Path, figdir: Path, vjson: Path
           ) -> tuple[dict[Output, bytes], list[Path]]:
    """Every file of the report, by its gated output, and the figures' paths."""
    figs = ctx.figs
    heads, sub = _headlines(ctx), _subtitle(ctx.runs, where_it_holds(ctx.data))
    written = [figdir / f"{f.name}.png" for f in figs.items]
    rel = {f.name: f"{figdir.name}/{f.name}.png" for f in figs.items}
    inputs = report_inputs(run_dirs)
    files = {Output(p, output_formats.FIGURE): f.png for p, f in zip(written, figs.items)}
    md_marker = output_formats.text_marker(output_formats.REPORT_MD, inputs)
    files[Output(md_path, output_formats.REPORT_MD, inputs)] = (  # the marker last: "# title" first
        render_markdown(TITLE, sub, heads, sections, rel) + "\n" + md_marker + "\n").encode()
    doctype = "<!DOCTYPE html>"  # the marker after it: a comment first would mean quirks
    files[Output(html_path, output_formats.REPORT_HTML, inputs)] = render_html(
        TITLE, sub, heads, sections).replace(
        doctype, doctype + output_formats.text_marker(output_formats.REPORT_HTML, inputs),
        1).encode()
    files[Output(vjson, output_formats.VERDICTS, inputs)] = json.dumps(
        {**verdicts_doc(ctx.data, ctx.cmp, ctx.margin), "cost": cost.records(ctx.cost),
         "recovery": ctx.recovery.doc, "inputs": list(inputs)}, indent=1).encode()
    return files, written


def _write(files: dict[Output, bytes], html_path: Path, figdir: Path,
           written: list[Path]) -> None:
    made = [d for d in (*reversed(html_path.parents), figdir) if not d.exists()]
    try:
        html_path.parent.mkdir(parents=True, exist_ok=True)
        figdir.mkdir(exist_ok=True)
        write_files_atomic(files)  # all or nothing: WriteError leaves the old report as it was
    except BaseException:
        for d in reversed(made):  # the directories this call made, if still empty
            with contextlib.suppress(OSError):
                d.rmdir()
        raise
    for stale in figdir.glob("*.png"):
        mark = output_formats.identify(stale) if stale not in written else None
        if mark is not None and mark.kind == output_formats.FIGURE and _OURS.match(stale.name):
            stale.unlink()  # a figure an earlier report wrote at this path


def build_report(run_dirs: list[Path], out: Path,
                 margin: float = verdicts.DEFAULT_MARGIN,
                 keep_disturbed: bool = False, price_per_device_hour: float | None = None,
                 epoch_samples: int = cost.IMAGENET_1K_TRAIN) -> ReportPaths:
    """Read run_dirs (never modified), write out (.html), out.md, out_figures/*.png and
    verdicts.json beside them. Repetitions disturbed by other work on the host are left
    out of the timings unless keep_disturbed (hvd_vs_ddp/run_model/disturbed.py). The Cost section
    (hvd_vs_ddp/reports/cost.py) prices device-hours when price_per_device_hour is given."""
    margin, price, epoch_samples = _settings(margin, price_per_device_hour, epoch_samples)
    run_dirs = _run_dirs(run_dirs)
    html_path, md_path, figdir, vjson = output_paths(run_dirs, out)  # gated: before any work
    runs = _load(run_dirs, keep_disturbed)
    ctx = report_context(runs, margin, price, epoch_samples)
    sections = build_sections(ctx)  # in hvd_vs_ddp/reports/sections/__init__.py's ORDER
    files, written = _files(ctx, sections, run_dirs, html_path, md_path, figdir, vjson)
    _write(files, html_path, figdir, written)
    unreadable = [f"{r.name}: cell {c.id!r}: {c.unreadable}" for r in runs for c in r.unreadable]
    return ReportPaths(html_path, md_path, figdir, written, vjson, unreadable)
