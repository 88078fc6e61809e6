"""Bad inputs to `hvd-vs-ddp run`, `report` and `doctor`: each must be refused with one
line "hvd-vs-ddp: error: ..." and exit 2, before any process starts, changing nothing.

One table (`CASES`) for the test (tests/unit/test_cli_errors.py: every case in
process, a few through the real command) and for the evidence table of issue 15
(scripts/bad_inputs_table.py: every case through the real command). `workdir(root)`
builds the directory they run in: a copy of a recorded run and some broken inputs.

    from tests.bad_inputs import CASES, workdir, tree_hash
"""
from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SMALL = ROOT / "tests" / "fixtures" / "runs" / "cpu-small"
TUNED = ROOT / "tests" / "fixtures" / "runs" / "cpu-tune"  # no collectives suite in it


@dataclass(frozen=True)
class Case:
    argv: tuple[str, ...]     # after `hvd-vs-ddp`; run cases get --runs-dir runs first
    words: tuple[str, ...]    # each must be in the error line
    skip_with_gpus: bool = False

    @property
    def id(self) -> str:
        return " ".join(repr(a) if (not a or " " in a or '"' in a) else a for a in self.argv)


def _c(line: list[str], *words: str, gpus: bool = False) -> Case:
    return Case(tuple(line), tuple(words), gpus)


def run(*args: str) -> list[str]:
    return ["run", "--runs-dir", "runs", *args]


CASES: list[Case] = [
    # -- run: names
    _c(run("--backends", "nccl-typo"), "unknown backend", "ddp-gloo"),
    _c(run("--backends", ""), "--backends", "empty"),
    _c(run("--backends", "ddp\u2010gloo"), "unknown backend"),  # a unicode hyphen
    _c(run("--backends", "ddp-nccl", "--world-sizes", "2"), "ddp-nccl", "GPU", gpus=True),
    _c(run("--backends", "single", "--world-sizes", "2"), "single", "world size 1 only"),
    _c(run("--workloads", "bert"), "unknown workload", "resnet50"),
    _c(run("--workloads", ""), "--workloads", "empty"),
    _c(run("--workloads", "r\u00e9snet50"), "unknown workload"),
    _c(run("--preset", "huge"), "unknown preset", "quick"),
    _c(run("--preset", ""), "--preset", "empty"),
    # -- run: world sizes
    _c(run("--world-sizes", "0"), "world size"),
    _c(run("--world-sizes", "-1"), "world size", ">= 1"),
    _c(run("--world-sizes", "abc"), "--world-sizes"),
    _c(run("--world-sizes", "1.5"), "--world-sizes", "integers"),
    _c(run("--world-sizes", "2,,x"), "--world-sizes"),
    _c(run("--world-sizes", ""), "--world-sizes", "empty"),
    _c(run("--world-sizes", "100000", "--backends", "ddp-gloo"), "--world-sizes", "--hosts"),
    # -- run: names of directories
    _c(run("--name", "../escape"), "path separators"),
    _c(run("--name", "a/b"), "path separators"),
    _c(run("--name", ".."), "path separators"),
    _c(run("--name", ""), "--name", "empty"),
    _c(run("--name", "earlier"), "already exists"),
    _c(["run", "--runs-dir", "afile"], "--runs-dir", "not a directory"),
    _c(["run", "--runs-dir", ""], "--runs-dir", "empty"),
    # -- run: --resume
    _c(run("--resume", "runs/nothing-here"), "no manifest.json"),
    _c(run("--resume", "afile"), "no manifest.json"),
    _c(run("--resume", "runs/corrupt"), "not a readable", "truncated"),
    _c(run("--resume", "runs/other-preset"), "preset is 'huge'"),
    _c(run("--resume", "runs/earlier", "--repeat", "4"), "--repeat 4", "keeps its repetitions"),
    _c(run("--resume", "runs/earlier", "--backends", "ddp-gloo"), "--backends",
       "cannot change a resumed run"),
    _c(run("--resume", "runs/earlier", "--preset", "full"), "--preset", "resumed run"),
    _c(run("--resume", ""), "--resume", "empty"),
    # -- run: --data-dir
    _c(run("--data-dir", "no/such/images"), "--data-dir", "no such directory"),
    _c(run("--data-dir", "images-empty"), "--data-dir", "holds no image"),
    _c(run("--data-dir", "images-broken"), "--data-dir", "not a readable image"),
    _c(run("--data-dir", "cifar-partial"), "--data-dir", "lacks", "data_batch_2"),
    _c(run("--data-dir", "no-classes"), "--data-dir", "no class folders"),
    _c(run("--data-dir", "afile"), "--data-dir"),
    _c(run("--data-dir", ""), "--data-dir", "empty"),
    # -- run: --cell-time-limit
    _c(run("--cell-time-limit", "0"), "--cell-time-limit", "> 0"),
    _c(run("--cell-time-limit", "-5"), "--cell-time-limit", "> 0"),
    _c(run("--cell-time-limit", "nan"), "--cell-time-limit", "> 0"),
    _c(run("--cell-time-limit", "inf"), "--cell-time-limit", "> 0"),
    _c(run("--cell-time-limit", "abc"), "--cell-time-limit", "not a number"),
    _c(run("--cell-time-limit", ""), "--cell-time-limit"),
    # -- run: --hosts
    _c(run("--hosts", "bad_host:2"), "--hosts", "not a host name"),
    _c(run("--hosts", "h1:0"), "--hosts", "positive integer"),
    _c(run("--hosts", "h1:-3"), "--hosts", "positive integer"),
    _c(run("--hosts", "h1:x"), "--hosts", "positive integer"),
    _c(run("--hosts", "h1:2,h1:2"), "--hosts", "named twice"),
    _c(run("--hosts", "h1:1"), "--hosts", "fewer than the largest world size"),
    _c(run("--hosts", ",,,"), "--hosts", "not a host name"),
    _c(run("--hosts", "h1:2 h2:2"), "--hosts"),
    _c(run("--hosts", ""), "--hosts", "empty"),
    # -- run: --repeat, --order-seed
    _c(run("--repeat", "0"), "--repeat", "integer >= 1"),
    _c(run("--repeat", "-2"), "--repeat", "integer >= 1"),
    _c(run("--repeat", "1.5"), "--repeat", "integer >= 1"),
    _c(run("--repeat", "three"), "--repeat", "integer >= 1"),
    _c(run("--order-seed", "x"), "--order-seed", "integer"),
    _c(run("--order-seed", "1.5"), "--order-seed", "integer"),
    # -- run: --suite-args (the suites' own declarations, then pytest's parser)
    _c(run("--suite-args", "--rounds 0"), "--rounds", ">= 1"),
    _c(run("--suite-args", "--rounds x"), "--rounds", "invalid int"),
    _c(run("--suite-args", "--steps-per-round -1"), "--steps-per-round", ">= 1"),
    _c(run("--suite-args", "--warmup-steps -1"), "--warmup-steps", ">= 0"),
    _c(run("--suite-args", "--convergence-steps 0"), "--convergence-steps", ">= 2"),
    _c(run("--suite-args", "--max-bytes abc"), "--max-bytes", "invalid int"),
    _c(run("--suite-args", "--collective-timeout -3"), "--collective-timeout", ">= 1"),
    _c(run("--suite-args", "--backends nope"), "unknown backend"),
    _c(run("--suite-args", "--workloads bert"), "unknown workload"),
    _c(run("--suite-args", "--knob-set nope"), "unknown knob set"),
    _c(run("--suite-args", "--workload-param gpt:image_size=9"), "no parameter"),
    _c(run("--suite-args", "--workload-param nonsense"), "NAME:KEY=VALUE"),
    _c(run("--suite-args", "--data-dir /no/such/images"), "--data-dir", "no such directory"),
    _c(run("--suite-args", "--test-time-limit nan"), "--test-time-limit", "> 0"),
    _c(run("--suite-args", "--test-time-limit 0"), "--test-time-limit", "> 0"),
    _c(run("--suite-args=--no-such-option"), "--suite-args", "unrecognized arguments"),
    _c(run("--suite-args", "--rounds 2 --bogus"), "--suite-args", "unrecognized arguments"),
    _c(run("--suite-args=-k"), "--suite-args", "-k", "expected one argument"),
    _c(run("--suite-args", "suites/other.py"), "--suite-args", "is not an option"),
    _c(run("--suite-args", '"unbalanced'), "--suite-args", "quotation"),
    _c(run("--suite-args", "--rounds '3"), "--suite-args", "quotation"),
    # -- run: the parser
    _c(run("--bogus-option"), "unrecognized arguments"),
    _c(run("--repeat"), "--repeat", "expected one argument"),
    # -- report
    _c(["report", "runs/nothing-here", "-o", "out/report.html"], "not a directory"),
    _c(["report", "afile", "-o", "out/report.html"], "not a directory"),
    _c(["report", "no-classes", "-o", "out/report.html"], "no manifest.json"),
    _c(["report", "runs/corrupt", "-o", "out/report.html"], "manifest.json", "truncated"),
    _c(["report", "runs/newer", "-o", "out/report.html"], "manifest.json", "newer"),
    _c(["report", "runs/live", "-o", "out/report.html"], "'running'", "--resume"),
    _c(["report", "runs/earlier", "-o", "out/report.pdf"], ".html"),
    _c(["report", "runs/earlier", "-o", "runs/earlier/report.html"], "inside"),
    _c(["report", "runs/earlier", "-o", "runs/earlier/cells/x.html"], "inside"),
    _c(["report", "runs/earlier", "-o", ""], "--output", "empty"),
    _c(["report", "runs/earlier"], "required", "-o"),
    _c(["report", "-o", "out/report.html"], "required", "RUN_DIR"),
    _c(["report", "", "-o", "out/report.html"], "RUN_DIR", "empty"),
    *[_c(["report", "runs/earlier", "-o", "out/report.html", "--margin", m], "--margin",
         "between 0 and 1") for m in ("0", "1", "-0.1", "nan", "inf", "abc", "")],
    *[_c(["report", "runs/earlier", "-o", "out/report.html", "--price-per-device-hour", p],
         "--price-per-device-hour", "> 0") for p in ("0", "-2.5", "nan", "inf", "two", "")],
    *[_c(["report", "runs/earlier", "-o", "out/report.html", "--epoch-samples", n],
         "--epoch-samples", "whole number") for n in ("0", "-5", "1.5", "1e6", "many", "")],
    _c(run("--launchers", "srun2"), "unknown launcher 'srun2'", "torchrun"),
    _c(run("--launchers", ""), "--launchers", "empty"),
    _c(run("--backends", "ddp-mpi", "--world-sizes", "2", "--launchers", "torchrun"),
       "--backends ddp-mpi", "no cell", "--launchers torchrun"),
    _c(["run", "--resume", "runs/earlier", "--launchers", "torchrun"], "--launchers",
       "cannot change a resumed run"),
    # -- the recovery preset (hvd_vs_ddp/recovery/plan.py)
    _c(run("--preset", "recovery", "--backends", "ddp-mpi"), "ddp-mpi has no elastic path",
       "horovodrun-gloo", "torchrun"),
    _c(run("--preset", "recovery", "--backends", "horovod", "--launchers", "horovodrun-mpi"),
       "horovodrun-mpi has no elastic path", "Gloo controller"),
    _c(run("--preset", "recovery", "--world-sizes", "1"), "needs at least 2 ranks"),
    _c(run("--preset", "recovery", "--suite-args", "--recovery-commit-every 0"),
       "--recovery-commit-every 0", ">= 1"),
    _c(run("--preset", "recovery", "--suite-args", "--recovery-min-world 3"),
       "--recovery-min-world 3 is above --recovery-world-size 2"),
    _c(run("--preset", "recovery", "--world-sizes", "2", "--suite-args",
           "--recovery-min-world 2"), "leaves 1 of 2 ranks", "lower --recovery-min-world"),
    _c(run("--preset", "recovery", "--suite-args", "--recovery-global-batch 100"),
       "global batch 100 does not split evenly over 3 ranks"),
    # -- project
    *[_c(["project", *a], *w) for a, w in (
        (["runs/earlier", "--devices", "8", "--interconnect", "warp-drive"],
         ("unknown interconnect 'warp-drive'", "ib-hdr", "measured")),
        (["runs/earlier", "--devices", "8", "--interconnect", "nvlink4"],
         ("unknown interconnect 'nvlink4'",)),  # an intra-node link named between nodes
        (["runs/earlier", "--devices", "8", "--interconnect", "ib-hdr", "--intra-node",
          "nvlink9"], ("unknown intra-node link", "nvlink4")),
        (["runs/earlier", "--devices", "0", "--interconnect", "ib-hdr"],
         ("--devices", "integers from 1")),
        (["runs/earlier", "--devices", "8,x", "--interconnect", "ib-hdr"], ("--devices",)),
        (["runs/earlier", "--devices", "", "--interconnect", "ib-hdr"], ("--devices", "empty")),
        (["runs/earlier", "--interconnect", "ib-hdr"], ("required", "--devices")),
        (["runs/earlier", "--devices", "8"], ("required", "--interconnect")),
        (["runs/earlier", "--devices", "8", "--interconnect", "ib-hdr", "--devices-per-node",
          "0"], ("--devices-per-node", ">= 1")),
        (["runs/earlier", "--devices", "8", "--interconnect", "ib-hdr", "--nics-per-node",
          "two"], ("--nics-per-node",)),
        (["runs/earlier", "--devices", "8", "--interconnect", "ib-hdr", "--algorithm",
          "magic"], ("--algorithm", "ring")),
        (["runs/earlier", "--devices", "8", "--interconnect", "ib-hdr", "--workloads", "bert"],
         ("--workloads bert", "not in", "mlp")),
        (["runs/earlier", "--devices", "8", "--interconnect", "ib-hdr", "--model",
          "resnet50"], ("--model", "--compute-ms")),
        (["runs/earlier", "--devices", "8", "--interconnect", "ib-hdr", "--compute-ms", "97",
          "--model", "resnet50"], ("RUN_DIR", "not both")),
        (["--devices", "8", "--interconnect", "ib-hdr"], ("give RUN_DIR", "--compute-ms")),
        (["runs/earlier", "--devices", "8", "--interconnect", "ib-hdr", "--draws", "1e9"],
         ("--draws",)),
        (["runs/earlier", "--devices", "8", "--interconnect", "ib-hdr", "--draws",
          "99999999"], ("--draws", "at most")),
        (["no-classes", "--devices", "8", "--interconnect", "ib-hdr"],
         ("not a run directory", "manifest.json")),
        (["runs/corrupt", "--devices", "8", "--interconnect", "ib-hdr"], ("manifest.json",)),
        (["runs/tuned", "--devices", "4", "--interconnect", "ib-hdr"],
         ("runs/tuned", "per-rank compute time is unknown")),
        (["runs/no-collectives", "--devices", "4", "--interconnect", "measured"],
         ("no allreduce sweep", "collectives")),
        (["--compute-ms", "97", "--devices", "8", "--interconnect", "ib-hdr"],
         ("--compute-ms", "--model")),
        (["--compute-ms", "0", "--model", "resnet50", "--devices", "8", "--interconnect",
          "ib-hdr"], ("--compute-ms", "> 0")),
        (["--compute-ms", "nan", "--model", "resnet50", "--devices", "8", "--interconnect",
          "ib-hdr"], ("--compute-ms", "> 0")),
        (["--compute-ms", "97", "--model", "resnet50", "--devices", "8", "--interconnect",
          "measured"], ("measured", "run directory")),
        (["--compute-ms", "97", "--model", "bert-xxl", "--devices", "8", "--interconnect",
          "ib-hdr"], ("cannot analyse model 'bert-xxl'", "resnet50")),
    )],
    # -- doctor and the command itself
    _c(["doctor", "--only", "ddp-gloo"], "--only", "--selftest"),
    _c(["doctor", "--selftest", "--only", "nope"], "unknown selftest check 'nope'"),
    _c(["doctor", "--selftest", "--only", ""], "--only", "empty"),
    _c(["doctor", "--bogus"], "unrecognized arguments"),
    _c(["bench"], "invalid choice"),
    _c([], "required"),
]


def workdir(root: Path) -> Path:
    """The directory the cases run in (their relative paths point into it)."""
    runs = root / "runs"
    shutil.copytree(SMALL, runs / "earlier")
    shutil.copytree(TUNED, runs / "tuned")
    shutil.copytree(SMALL, runs / "no-collectives")  # the run, its collectives suite left out
    for f in (runs / "no-collectives" / "cells").glob("*.json"):
        doc = json.loads(f.read_text())
        doc["benchmarks"] = [b for b in doc["benchmarks"]
                             if b["extra_info"].get("kind") != "collective"]
        f.write_text(json.dumps(doc))
    man = json.loads((SMALL / "manifest.json").read_text())
    for name, change in (("other-preset", {"preset": "huge"}),
                         ("newer", {"format_version": 99}),
                         ("live", {"cells": [{**man["cells"][0], "status": "running"},
                                             *man["cells"][1:]]})):
        (runs / name).mkdir()
        (runs / name / "manifest.json").write_text(json.dumps({**man, **change}))
    (runs / "corrupt").mkdir()
    (runs / "corrupt" / "manifest.json").write_text(json.dumps(man)[:500])
    (root / "images-empty" / "cat").mkdir(parents=True)  # a class with no image
    (root / "images-empty" / "cat" / "notes.txt").write_text("no image here")
    (root / "images-broken" / "cat").mkdir(parents=True)
    (root / "images-broken" / "cat" / "a.jpg").write_bytes(b"not a jpeg")
    (root / "cifar-partial" / "cifar-10-batches-py").mkdir(parents=True)
    (root / "cifar-partial" / "cifar-10-batches-py" / "data_batch_1").write_bytes(b"x")
    (root / "no-classes").mkdir()
    (root / "afile").write_text("a file, not a directory")
    return root


def tree_hash(root: Path) -> str:
    """sha256 over every path (files and directories) and every file's bytes and mode."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        h.update(str(p.relative_to(root)).encode("utf-8", "surrogateescape") + b"\0")
        st = p.lstat()
        h.update(f"{st.st_mode:o}".encode())
        if p.is_file() and not p.is_symlink():
            h.update(p.read_bytes())
    return h.hexdigest()
