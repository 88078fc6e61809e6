"""hvd_vs_ddp/reports/stability.py: coverage, opposite sides and same verdicts across runs, on
hand-made verdicts.json documents whose answers are known, and its bad-input line.

    python -m pytest tests/unit/test_stability.py -q
"""
from __future__ import annotations

import json

from hvd_vs_ddp.reports import stability


def _doc(*pairs):
    return {"format": stability.FORMAT, "format_version": 1, "pairs": [
        {"case": "gpt", "world_size": 2, "a": a, "b": "ddp-gloo", "ratio": r, "lo": lo,
         "hi": hi, "verdict": v, "faster": f} for a, r, lo, hi, v, f in pairs]}


def _write(tmp_path, name, doc):
    d = tmp_path / name
    d.mkdir()
    (d / "verdicts.json").write_text(json.dumps(doc))
    return d / "verdicts.json"


def test_counts_coverage_flips_and_agreement(tmp_path, capsys):
    one = _doc(("horovod (mpi)", 1.10, 1.07, 1.13, "faster", "horovod (mpi)"),
               ("horovod (gloo)", 1.00, 0.98, 1.02, "equivalent", None))
    two = _doc(("horovod (mpi)", 1.12, 1.08, 1.16, "faster", "horovod (mpi)"),
               ("horovod (gloo)", 0.90, 0.88, 0.92, "faster", "ddp-gloo"))
    files = [_write(tmp_path, "r1", one), _write(tmp_path, "r2", two)]
    assert stability.main([str(f) for f in files]) == 0
    out = capsys.readouterr().out
    # mpi: both intervals hold the other's ratio (2/2); gloo: neither (0/2)
    assert "2/4 = 50%" in out and "0 pair(s) called opposite" in out
    assert "1/2 = 50% got the same verdict" in out
    assert stability.main([str(f) for f in files] + ["--check"]) == 1


def test_opposite_sides_are_flagged(tmp_path, capsys):
    one = _doc(("horovod (mpi)", 1.10, 1.07, 1.13, "faster", "horovod (mpi)"))
    two = _doc(("horovod (mpi)", 0.90, 0.87, 0.93, "faster", "ddp-gloo"))
    files = [_write(tmp_path, "a", one), _write(tmp_path, "b", two)]
    assert stability.main([str(f) for f in files] + ["--check"]) == 1
    out = capsys.readouterr().out
    assert "OPPOSITE" in out and "1 pair(s) called opposite" in out


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    good = _write(tmp_path, "g", _doc(("h", 1.0, 0.9, 1.1, "inconclusive", None)))
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "hvd-vs-ddp/verdicts", "pairs": [')
    for argv in ([str(good)], [str(good), str(bad)], [str(good), str(tmp_path / "none")]):
        assert stability.main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("hvd-vs-ddp: error:"), err
