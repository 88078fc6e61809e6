"""Render a report (headlines + sections of text, tables and figures) as one
self-contained HTML page (inline CSS, figures as base64 PNG, no external URLs) and as
Markdown (figures as PNG files next to it, referenced by relative path).

For the reader in a browser (hvd_vs_ddp/reports/browser_check.py checks it): the header's
"label: value" lines are a definition list; a table cell over FOLD_AT characters is folded
into a <details> element (its first words as the summary, its "; "-separated items one a
line inside); short cells never wrap (no "ddp-" / "gloo"); every table scrolls sideways in
its own keyboard-reachable region; printed, tables wrap to the page.

    from hvd_vs_ddp.reports.render import Section, render_html, render_markdown
    html = render_html("title", ["subtitle"], ["headline"], [Section("Throughput", [...])])
"""
from __future__ import annotations

import base64
import html
import re
from dataclasses import dataclass, field

from hvd_vs_ddp.reports.figures import Fig
from hvd_vs_ddp.reports.tables import Table


@dataclass
class Notes:
    items: list[str]


Block = str | Table | Fig | Notes | list  # a list of Figs is a collapsible group


@dataclass
class Section:
    title: str
    blocks: list[Block] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-")


CSS = """
body{font-family:-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:0;color:#1d1d1f;
background:#fafafa;line-height:1.45}
main{max-width:1280px;margin:0 auto;padding:24px 32px 64px}
h1{font-size:1.7em;margin:0 0 4px} h2{border-bottom:2px solid #e2e2e2;padding-bottom:4px;
margin-top:40px} h3{margin:22px 0 6px;font-size:1.05em}
.sub{color:#555;margin:0 0 2px;font-size:.92em}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:1px 12px;margin:4px 0 0;
font-size:.88em;color:#444} dl.meta dt{font-weight:600} dl.meta dd{margin:0}
.headline{background:#fff;border-left:6px solid #0072B2;padding:12px 20px;margin:18px 0;
box-shadow:0 1px 3px rgba(0,0,0,.08)} .headline li{margin:4px 0}
nav{font-size:.9em;margin:8px 0 0} nav a{margin-right:14px;color:#0072B2;text-decoration:none}
.tw{overflow-x:auto;margin:6px 0 4px}
table{border-collapse:collapse;font-size:.8em;background:#fff}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0;position:sticky;top:0} tr:nth-child(even) td{background:#fbfbfb}
td:first-child,td:nth-child(2){white-space:nowrap}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.nw,span.nw{white-space:nowrap} td details{min-width:10em;max-width:22em}
td details summary{font-weight:400;margin:0;color:#333}
td .full{overflow-wrap:anywhere;font-size:.95em;color:#333;margin-top:4px}
td.hvd{background:#fde4d4!important;font-weight:600} td.ddp{background:#d6e8f5!important;
font-weight:600} td.nsd{color:#555} td.up{background:#d9f0d9!important;font-weight:600}
td.down{background:#f3dede!important;font-weight:600}
td.bad{background:#f8d0d0!important;font-weight:600}
.note{color:#555;font-size:.86em;margin:2px 0 12px}
figure{margin:14px 0;background:#fff;padding:10px;border:1px solid #e6e6e6}
figure img{max-width:100%;height:auto;display:block}
figcaption{font-size:.86em;color:#444;margin-top:6px}
details summary{cursor:pointer;font-weight:600;margin:10px 0}
.headline li b{font-weight:600}
@media (max-width:600px){main{padding:12px 12px 40px} dl.meta{grid-template-columns:1fr}}
@media print{main{max-width:none;padding:0} nav{display:none} .tw{overflow:visible}
table{font-size:.68em;width:100%;table-layout:fixed}
td details{min-width:0;max-width:none} th{position:static} td,th{padding:2px 4px}
th,td,td.num,td.nw,span.nw,td:first-child,td:nth-child(2){white-space:normal;
overflow-wrap:anywhere}
figure{break-inside:avoid} tr{break-inside:avoid}}
"""

FOLD_AT = 120  # characters: a longer cell is folded (browser_check.CELL_MAX)
_NOWRAP = 16   # characters: a shorter cell stays on one line
# a short word with a hyphen (ddp-gloo) is never broken at its hyphen
_HYPHENED = re.compile(r"(?<!\S)[^\s<>&]{0,12}\w-\w[^\s<>&]{0,12}(?!\S)")

_NUM = re.compile(r"^-?[\d.]+(e[-+]?\d+)?( ✗)?$|^[\d.]+–[\d.]+$|^-?\d+%$"
                  r"|^[\d.]+ \[[\d.]+–[\d.]+\]$")  # a ratio [its interval]
_CLASS = {"faster: horovod": "hvd", "faster: ddp": "ddp", "B faster": "up", "A faster": "down",
          "equivalent": "nsd", "inconclusive": "nsd", "NO": "bad", "YES": "bad",
          "failed": "bad", "timeout": "bad", "interrupted": "bad", "unreadable": "bad"}


def _e(s) -> str:
    return html.escape(str(s), quote=True)


def _fold(s: str) -> str:
    """A long cell as <details>: its first words, then every "; " item on a line."""
    items = [x for x in s.split("; ") if x] if "; " in s else [s]
    head = items[0] if len(items[0]) <= 60 else items[0][:57].rsplit(" ", 1)[0] + " …"
    more = f" (+{len(items) - 1} more)" if len(items) > 1 else ""
    return (f"<details><summary>{_e(head)}{more}</summary><div class='full'>"
            + "<br>".join(_e(x) for x in items) + "</div></details>")


def _cell_html(v) -> str:
    s = str(v)
    cls = next((c for k, c in _CLASS.items() if s == k or s.startswith(k + " ")
                or (k.startswith("faster: ") and s.startswith(k))), "") \
        or ("num" if _NUM.match(s) else "")
    if len(s) > FOLD_AT:
        return f"<td class='{cls}'>{_fold(s)}</td>" if cls else f"<td>{_fold(s)}</td>"
    if len(s) <= _NOWRAP and cls != "num":
        cls = f"{cls} nw".strip()
    text = _e(s) if "nw" in cls or cls == "num" else _HYPHENED.sub(
        lambda m: f"<span class='nw'>{m.group(0)}</span>", _e(s))
    return f"<td class='{cls}'>{text}</td>" if cls else f"<td>{text}</td>"


def table_html(t: Table) -> str:
    out = [f"<h3>{_e(t.title)}</h3>"]
    if t.df.empty:
        return out[0] + "<p class='note'>(no rows)</p>"
    head = "".join(f"<th>{_e(c)}</th>" for c in t.df.columns)
    body = "".join("<tr>" + "".join(_cell_html(v) for v in row) + "</tr>"
                   for row in t.df.astype(str).itertuples(index=False))
    out.append(f"<div class='tw' role='region' tabindex='0' aria-label='{_e(t.title)}'>"
               f"<table><thead><tr>{head}</tr></thead>"
               f"<tbody>{body}</tbody></table></div>")
    if t.note:
        out.append(f"<p class='note'>{_e(t.note)}</p>")
    return "".join(out)


def fig_html(f: Fig) -> str:
    data = base64.b64encode(f.png).decode("ascii")
    cap = _e(f.title) + (f" — {_e(f.caption)}" if f.caption else "")
    return (f"<figure><img alt='{_e(f.title)}' src='data:image/png;base64,{data}'/>"
            f"<figcaption>{cap}</figcaption></figure>")


def _block_html(b: Block) -> str:
    if isinstance(b, Table):
        return table_html(b)
    if isinstance(b, Fig):
        return fig_html(b)
    if isinstance(b, Notes):
        return "<ul class='note'>" + "".join(f"<li>{_e(n)}</li>" for n in b.items) + "</ul>"
    if isinstance(b, list):
        return (f"<details><summary>{len(b)} figure(s): show</summary>"
                + "".join(fig_html(f) for f in b) + "</details>")
    return f"<p>{_e(b)}</p>"


def _header(subtitle: list[str]) -> str:
    """"label: value" lines as a definition list; any other line as a paragraph."""
    pairs = [s.split(": ", 1) for s in subtitle]
    if not subtitle or any(len(p) != 2 or len(p[0]) > 24 for p in pairs):
        return "".join(f"<p class='sub'>{_e(s)}</p>" for s in subtitle)
    return ("<dl class='meta'>" + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in pairs)
            + "</dl>")


def _answer(h: str) -> str:
    """One answer line, its subject ("gpt at 2 ranks:") in bold."""
    lead, sep, rest = h.partition(": ")
    return f"<li><b>{_e(lead)}:</b> {_e(rest)}</li>" if sep and len(lead) <= 60 else \
        f"<li>{_e(h)}</li>"


def render_html(title: str, subtitle: list[str], headlines: list[str],
                sections: list[Section]) -> str:
    nav = "".join(f"<a href='#{s.anchor}'>{_e(s.title)}</a>" for s in sections)
    parts = [f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             "<meta name='viewport' content='width=device-width, initial-scale=1'>"
             f"<title>{_e(title)}</title><style>{CSS}</style></head><body><main>",
             f"<h1>{_e(title)}</h1>", _header(subtitle),
             "<div class='headline'><strong>Answer</strong><ul>",
             *(_answer(h) for h in headlines), "</ul></div>",
             f"<nav aria-label='sections'>{nav}</nav>"]
    for s in sections:
        parts.append(f"<section id='{s.anchor}'><h2>{_e(s.title)}</h2>")
        parts.extend(_block_html(b) for b in s.blocks)
        parts.append("</section>")
    parts.append("</main></body></html>\n")
    return "\n".join(parts)


def _md_cell(v) -> str:
    return str(v).replace("|", "\\|").replace("\n", " ")


def table_md(t: Table) -> str:
    out = [f"### {t.title}", ""]
    if t.df.empty:
        return "\n".join(out + ["(no rows)", ""])
    out.append("| " + " | ".join(_md_cell(c) for c in t.df.columns) + " |")
    out.append("|" + "|".join("---" for _ in t.df.columns) + "|")
    out.extend("| " + " | ".join(_md_cell(v) for v in row) + " |"
               for row in t.df.astype(str).itertuples(index=False))
    if t.note:
        out += ["", f"*{t.note}*"]
    return "\n".join(out + [""])


def _fig_md(f: Fig, paths: dict[str, str]) -> str:
    cap = f" — {f.caption}" if f.caption else ""
    return f"![{f.title}]({paths[f.name]})\n\n*{f.title}{cap}*\n"


def render_markdown(title: str, subtitle: list[str], headlines: list[str],
                    sections: list[Section], fig_paths: dict[str, str]) -> str:
    out = [f"# {title}", "", *(f"{s}  " for s in subtitle), "", "**Answer**", "",
           *(f"- {h}" for h in headlines), ""]
    for s in sections:
        out += [f"## {s.title}", ""]
        for b in s.blocks:
            if isinstance(b, Table):
                out.append(table_md(b))
            elif isinstance(b, Fig):
                out.append(_fig_md(b, fig_paths))
            elif isinstance(b, list):
                out.extend(_fig_md(f, fig_paths) for f in b)
            elif isinstance(b, Notes):
                out += [f"- {n}" for n in b.items] + [""]
            else:
                out += [str(b), ""]
    return "\n".join(out).rstrip() + "\n"
