"""docs/results-format.md cannot drift from the records in results/.

Every ```fields RecordName``` block of the doc lists one field per line
(`name  type  required|optional  description`); this checks, for every record of the
format (every kind in results.KINDS, CollectiveSize, MachineInfo, Manifest, CellEntry),
that the block exists, names exactly the record's fields, says required/optional as
the record does, sits under the `### kind = "..."` heading of its kind, and that the
doc's launcher list is results.LAUNCHERS. Torch-free, well under a second.

    python -m pytest tests/unit/test_results_doc.py -q
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from hvd_vs_ddp import results_schema as results
from hvd_vs_ddp.results_schema import FORMAT_VERSION, KINDS, LAUNCHERS

DOC = Path(__file__).resolve().parents[2] / "docs" / "results-format.md"
BLOCK = re.compile(r"^```fields (\w+)\n(.*?)^```$", re.S | re.M)
RECORDS = [*KINDS.values(), results.CollectiveSize, results.MachineInfo, results.Manifest,
           results.CellEntry, results.Repetition]


def _blocks() -> dict[str, tuple[int, list[tuple[str, str, str]]]]:
    text = DOC.read_text()
    out = {}
    for m in BLOCK.finditer(text):
        assert m.group(1) not in out, f"two fields blocks for {m.group(1)}"
        lines = [ln.split(None, 3) for ln in m.group(2).splitlines() if ln.strip()]
        assert all(len(p) >= 3 for p in lines), f"{m.group(1)}: a line lacks name/type/status"
        out[m.group(1)] = (m.start(), [(p[0], p[1], p[2]) for p in lines])
    return out


def test_doc_is_for_this_version():
    assert DOC.read_text().splitlines()[0] == f"# Results format (format_version {FORMAT_VERSION})"


def test_every_block_names_a_record():
    assert set(_blocks()) == {cls.__name__ for cls in RECORDS}


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__name__)
def test_block_lists_exactly_the_record_fields(cls):
    _, rows = _blocks()[cls.__name__]
    names = [r[0] for r in rows]
    assert len(names) == len(set(names)), f"{cls.__name__}: a field is listed twice"
    assert set(names) == set(cls.field_names()), (
        f"{cls.__name__}: only in the doc {sorted(set(names) - set(cls.field_names()))}, "
        f"only in the record {sorted(set(cls.field_names()) - set(names))}")
    for name, _type, status in rows:
        assert status in ("required", "optional"), (cls.__name__, name, status)
        want = "required" if name in cls.required_names() else "optional"
        assert status == want, f"{cls.__name__}.{name}: the doc says {status}, the record {want}"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_kind_block_sits_under_its_heading(kind):
    text = DOC.read_text()
    start, _ = _blocks()[KINDS[kind].__name__]
    headings = [(m.start(), m.group(1)) for m in re.finditer(r'^### kind = "(\w+)"', text, re.M)]
    above = [name for pos, name in headings if pos < start]
    assert above and above[-1] == kind
    assert f"(suite `{KINDS[kind].SUITE}`)" in text[text.index(f'### kind = "{kind}"'):start]


def test_launcher_list_is_the_vocabulary():
    text = DOC.read_text()
    line = text.split("**Launchers**", 1)[1].split("\n\n", 1)[0]
    assert re.findall(r"`([a-z-]+)`", line.split(":", 1)[1]) == list(LAUNCHERS)
