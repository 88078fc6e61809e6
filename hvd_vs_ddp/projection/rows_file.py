"""Reading files of published rows: the repository's, and CSVs from elsewhere (`--rows`).

The projection is judged on published results that are not in its validation data. This
module reads such a file as people write one (a spreadsheet's export: a byte-order mark,
';' or tab between fields, spaces after them, 'GPUs' for devices, '5,900' or '40,8'),
checks every value once; hvd_vs_ddp/projection/against_published.py then projects each row with
the model error of every source in the repository, so the file's rows are out of sample.
The repository's own files are read the same way. A file it cannot use is one line naming
the line and column.

    python -m hvd_vs_ddp.projection.validation --rows more.csv

Columns (head_to_head.csv's; these are needed, an id is not): model, batch, devices, per_node,
intra, inter (may be empty where every device is in one node), compute_ms (one device's
step), ddp and horovod: samples/s of the whole job, or per device with `unit` =
samples_per_s_per_device ('img/s per GPU'), or times to the same result with `unit` =
time. Library settings left out are today's defaults (against_published.DEFAULTS).
`grad_dtype` (optional): fp16 or bf16 where the script reduces half-precision gradients
(it casts the model, as NVIDIA's BERT does with --allreduce_post_accumulation_fp16); empty
or fp32: the layout's fp32 gradients. `reduce_after_backward` (optional): yes where the
script reduces the gradients in a step of their own after backward (no overlap), no or
empty where each is reduced as backward makes it. The settings that say how the
study's scripts ran, each optional (empty: the default named first), in any case:
`controller` (Horovod's: mpi, gloo), `nccl_avg` (NCCL >= 2.10 averaging: yes, no),
`ready_wait` (Horovod's wait for the gradients: gpu, cpu), `algorithm` (auto, ring, tree,
hierarchical), `optimizer` (loop, foreach: torch's multi-tensor kernels, its default on
CUDA since 2.0), `unpinned` (the libraries whose script loads with pin_memory=False:
ddp, horovod, both or none). A row of one library names it in `library` (ddp, horovod).
"""
from __future__ import annotations

import csv
import math
import re
from pathlib import Path

from hvd_vs_ddp.projection.collectives import ALGORITHMS

# Column names people use for head_to_head.csv's own (after lower case, '_' for spaces)
ALIASES = {"gpus": "devices", "num_gpus": "devices", "batch_size": "batch",
           "gpus_per_node": "per_node", "devices_per_node": "per_node",
           "intra_node": "intra", "interconnect": "inter", "inter_node": "inter",
           "compute": "compute_ms", "step_ms": "compute_ms"}
# name: (integer?, may be empty)
NUMBERS = {"batch": (True, False), "devices": (True, False), "per_node": (True, False),
           "compute_ms": (False, False), "nics_per_node": (True, True),
           "ddp_bucket_mb": (False, True), "bucket_mb": (False, True),
           "fusion_mb": (False, True), "cycle_ms": (False, True)}
# Units as people write them -> validation's ("images/sec" and "img/s" read as samples)
UNITS = {"samples/s": "samples_per_s", "samples_s": "samples_per_s",
         "throughput": "samples_per_s", "samples/s/gpu": "samples_per_s_per_device",
         "samples/s_per_gpu": "samples_per_s_per_device",
         "samples_per_s_per_gpu": "samples_per_s_per_device",
         "samples/s/device": "samples_per_s_per_device", "time_to_result": "time",
         "seconds": "time", "s": "time", "minutes": "time", "hours": "time",
         "efficiency": "scaling_efficiency"}
# The settings a row may name, in any case; the first is the default where it is empty
CHOICES = {"controller": ("mpi", "gloo"), "nccl_avg": ("yes", "no"),
           "ready_wait": ("gpu", "cpu"), "algorithm": ALGORITHMS,
           "optimizer": ("loop", "foreach")}
UNPINNED = {"": "", "none": "", "no": "", "ddp": "ddp", "horovod": "horovod",
            "both": "ddp horovod"}
# `grad_dtype`: the gradients' type the script reduces (empty: fp32) -> bytes per element
GRAD_BYTES = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2}
PAIR = ("ddp", "horovod")  # a head-to-head row's published values
SINGLE = ("published",)    # a row of one library (`library` set)
LINE = "_line"             # the row's line in the file, for errors


class RowsError(ValueError):
    """A --rows file the projection cannot use (str: one line)."""


def _header(name: str) -> str:
    key = re.sub(r"[\s\-]+", "_", name.strip().lower())
    return ALIASES.get(key, key)


def _number(text: str, decimal_comma: bool) -> float:
    t = text.strip().replace(" ", "").replace("_", "")
    if decimal_comma and re.fullmatch(r"-?\d+,\d+", t):
        t = t.replace(",", ".")
    elif re.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?", t):  # thousands: 5,900.5
        t = t.replace(",", "")
    return float(t)


def _checked(row: dict, line: int, decimal_comma: bool) -> dict:
    """The row with its numbers in Python's notation; a bad one is a RowsError."""
    out = dict(row)
    values = SINGLE if row.get("library") else PAIR
    for col, (integer, optional) in [*NUMBERS.items(), *((v, (False, False)) for v in values)]:
        text = (row.get(col) or "").strip()
        if not text:
            if optional:
                continue
            raise RowsError(f"line {line}: missing column {col!r}" if col not in row
                            else f"line {line}: {col} is empty")
        try:
            value = _number(text, decimal_comma)
        except ValueError:
            raise RowsError(f"line {line}: {col} {text!r} is not a number") from None
        if not 0 < value < math.inf or (integer and value != int(value)):  # nan compares false
            kind = "a whole number" if integer else "a number"
            raise RowsError(f"line {line}: {col} must be {kind} > 0, not {text!r}")
        out[col] = str(int(value)) if integer else repr(value)
    library = (row.get("library") or "").strip().lower()
    if values == SINGLE:
        if library not in PAIR:
            raise RowsError(f"line {line}: library {row['library']!r} is not one of "
                            f"{', '.join(PAIR)}")
        out["library"] = library
    for col, choices in CHOICES.items():
        text = (row.get(col) or "").strip().lower()
        if text and text not in choices:
            raise RowsError(f"line {line}: {col} {row[col]!r} is not one of "
                            f"{', '.join(choices)}")
        out[col] = text
    words = re.split(r"[\s,+/&]+|\band\b", (row.get("unpinned") or "").strip().lower())
    try:
        out["unpinned"] = " ".join(sorted({w for x in words for w in UNPINNED[x].split()}))
    except KeyError:
        raise RowsError(f"line {line}: unpinned {row['unpinned']!r} is not one of ddp, "
                        "horovod, both, none") from None
    dtype = (row.get("grad_dtype") or "").strip().lower()
    if dtype and dtype not in GRAD_BYTES:
        raise RowsError(f"line {line}: grad_dtype {row['grad_dtype']!r} is not one of "
                        f"{', '.join(GRAD_BYTES)}")
    out["grad_dtype"] = dtype
    after = (row.get("reduce_after_backward") or "no").strip().lower()
    if after not in ("yes", "no"):
        raise RowsError(f"line {line}: reduce_after_backward {row['reduce_after_backward']!r} "
                        "is not yes or no")
    out["reduce_after_backward"] = after
    return _in_units(out, values, line)


def _unit(text: str) -> str:
    key = re.sub(r"[\s\-]+", "_", text.strip().lower())
    key = re.sub(r"(?<![a-z])(?:images|imgs|img)(?![a-z])", "samples", key)
    key = re.sub(r"(?<![a-z])sec(?![a-z])", "s", key)
    return UNITS.get(key, key)


def _in_units(row: dict, values: tuple[str, ...], line: int) -> dict:
    """The published values in what validation reads: a pair's as samples/s of the whole
    job (or times), a single library's per device (or its scaling efficiency)."""
    unit = _unit(row.get("unit") or "samples_per_s")
    if unit not in ("samples_per_s", "samples_per_s_per_device", "time",
                    "scaling_efficiency") or (unit == "time" and values == SINGLE) \
            or (unit == "scaling_efficiency" and values == PAIR):
        accepted = ("samples_per_s (the whole job), samples_per_s_per_device, "
                    + ("scaling_efficiency" if values == SINGLE
                       else "time (to the same result)"))
        raise RowsError(f"line {line}: unit {row.get('unit')!r} is not one of {accepted}")
    devices = int(row["devices"])
    if values == PAIR and unit == "samples_per_s_per_device":
        row.update({v: repr(float(row[v]) * devices) for v in values}, unit="samples_per_s")
    elif values == SINGLE and unit == "samples_per_s":
        row.update({v: repr(float(row[v]) / devices) for v in values},
                   unit="samples_per_s_per_device")
    else:
        row["unit"] = unit
    return row


def read(path: Path) -> list[dict]:
    """The file's rows with head_to_head.csv's column names, every value checked."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise RowsError(str(exc)) from None
    if b"\x00" in raw:
        raise RowsError("not a CSV text file (it holds NUL bytes)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:  # a spreadsheet's export in a Windows code page
        text = raw.decode("cp1252", errors="replace")
    first = next((line for line in text.splitlines() if line.strip()), "")  # the header
    delimiter = max(",;\t", key=first.count)
    reader = csv.reader(text.splitlines(), delimiter=delimiter, skipinitialspace=True)
    try:  # (line, fields), blank lines left out
        table = [(reader.line_num, r) for r in reader if any(c.strip() for c in r)]
    except csv.Error as exc:
        raise RowsError(str(exc)) from None
    if len(table) < 2:
        raise RowsError("no rows (a header of head_to_head.csv's columns, then one row per "
                        "published result)")
    names = [_header(n) for n in table[0][1]]
    rows = []
    for line, cells in table[1:]:
        if len(cells) > len(names):
            raise RowsError(f"line {line}: {len(cells)} fields under a header of "
                            f"{len(names)}")
        row = {n: c.strip() for n, c in zip(names, cells, strict=False)}
        row["id"] = row.get("id") or f"line {line}"
        row[LINE] = str(line)
        rows.append(_checked(row, line, decimal_comma=delimiter == ";"))
    return rows
