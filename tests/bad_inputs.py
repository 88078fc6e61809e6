"""Bad inputs to `hvd-vs-ddp run`, `report`, `project` and `doctor`: each must be refused
with one line "hvd-vs-ddp: error: ..." and exit 2, before any process starts, changing
nothing.

One table (`CASES`) for the test (tests/unit/test_cli_errors.py: every case in
process, a few through the real command) and for the evidence tables
(benchmarks/bad_inputs_table.py: every case through the real command; `--owner-judged`:
the cases of `OWNER_JUDGED`, with the input run's hash before and after). `workdir(root)`
builds the directory they run in: a copy of a recorded run and some broken inputs
(run directories missing what a report needs, files of every kind an output must not
replace, external workload files under ext/).

    from tests.bad_inputs import CASES, workdir, tree_hash
"""
from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXTERNAL = ROOT / "tests" / "external"
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


def cli_status(argv: list[str] | tuple[str, ...]) -> int | str | None:
    """`hvd-vs-ddp ARGV` in this process: its exit status, argparse's SystemExit too."""
    from hvd_vs_ddp.cli import main

    try:
        return main(list(argv))
    except SystemExit as exc:
        return exc.code


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
    # -- run: --input (the input-pipeline axis)
    _c(run("--input", "jpg"), "--input", "unknown input", "memory, jpeg"),
    _c(run("--input", ""), "--input", "empty"),
    _c(run("--input", "jpeg", "--workloads", "gpt"), "--input jpeg", "labelled images"),
    _c(run("--input", "jpeg", "--workloads", "resnet50", "--data-dir", "images-png"),
       "--input jpeg", "holds no JPEG"),
    _c(run("--suite-args", "--input jpeg"), "--input is chosen per cell", "run --input"),
    _c(run("--suite-args", "--loader-workers -1"), "--loader-workers", ">= 0"),
    _c(run("--suite-args", "--pin-memory maybe"), "--pin-memory", "unknown pin memory"),
    _c(run("--suite-args", "--jpeg-size 5000"), "--jpeg-size", "<= 4096"),
    _c(run("--resume", "runs/earlier", "--input", "jpeg"), "--input", "resumed run"),
    # -- run: --data-dir
    _c(run("--data-dir", "no/such/images"), "--data-dir", "no such directory"),
    _c(run("--data-dir", "images-empty"), "--data-dir", "holds no image"),
    _c(run("--data-dir", "images-broken"), "--data-dir", "not a readable image"),
    _c(run("--data-dir", "cifar-partial"), "--data-dir", "lacks", "data_batch_2"),
    _c(run("--data-dir", "no-classes"), "--data-dir", "no class folders"),
    _c(run("--data-dir", "afile"), "--data-dir", "a file, not a directory"),
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
    # valid suite options the run chooses per cell: a later --backends on a cell's command
    # line won (a cell "single" trained horovod, "ddp-gloo" nothing)
    _c(run("--suite-args", "--backends horovod"), "--suite-args", "--backends is chosen "
       "per cell", "run --backends"),
    _c(run("--suite-args", "--knob-set compile-all"), "--knob-set is chosen per cell",
       "--preset"),
    # pytest's parser checked with the plugins a cell loads: every cell failed at start-up
    _c(run("--suite-args", "-x --lf"), "--suite-args", "unrecognized arguments: --lf"),
    _c(run("--suite-args", "-n 2"), "--suite-args", "unrecognized arguments: -n"),
    _c(run("--suite-args", "-p no:pytest_benchmark.plugin"), "--suite-args",
       "unloads pytest-benchmark"),
    _c(run("--suite-args", "-p no_such_plugin"), "--suite-args", "no_such_plugin"),
    _c(run("--suite-args", '"unbalanced'), "--suite-args", "quotation"),
    _c(run("--suite-args", "--rounds '3"), "--suite-args", "quotation"),
    # -- run: the parser
    _c(run("--bogus-option"), "unrecognized arguments"),
    _c(run("--repeat"), "--repeat", "expected one argument"),
    # accepted before: 100000 repetitions of every cell; a limit Python's waits overflow on
    _c(run("--repeat", "100000"), "--repeat", "at most 1000"),
    _c(run("--cell-time-limit", "1e12"), "--cell-time-limit", "at most 604800 seconds"),
    # -- report
    _c(["report", "runs/nothing-here", "-o", "out/report.html"], "not a directory"),
    _c(["report", "afile", "-o", "out/report.html"], "not a directory"),
    _c(["report", "no-classes", "-o", "out/report.html"], "no manifest.json"),
    _c(["report", "runs/corrupt", "-o", "out/report.html"], "manifest.json", "truncated"),
    _c(["report", "runs/newer", "-o", "out/report.html"], "manifest.json", "newer"),
    _c(["report", "runs/live", "-o", "out/report.html"], "'running'", "--resume"),
    _c(["report", "runs/earlier", "-o", "out/report.pdf"], ".html"),
    _c(["report", "runs/earlier", "runs/../runs/earlier", "-o", "out/report.html"],
       "is given twice (also as runs/earlier)"),  # it was a report of one run, exit 0
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
    # a launcher `run` cannot start, or one under which no backend is compared: before,
    # their cells were left out with a note and the one-rank references ran alone
    _c(run("--launchers", "srun"), "--launchers srun", "started by the user"),
    _c(run("--launchers", "single"), "--launchers single", "no distributed backend"),
    # a runs folder below a file: judged before the plan is announced (it was an error
    # after the "N cells ->" line)
    _c(["run", "--runs-dir", "runs/earlier/manifest.json/more"], "--runs-dir",
       "manifest.json is not a directory"),
    # a step time past a day: 1e308 overflowed the projection (a warning, exit 0)
    _c(["project", "--compute-ms", "1e308", "--model", "resnet50", "--devices", "8"],
       "--compute-ms", "at most 86400000 (a day)"),
    # a place no folder can be made in, though os.access lets root write there: it was an
    # error after the "N cells ->" line
    _c(["run", "--runs-dir", "/proc/hvd-vs-ddp-runs"], "--runs-dir", "/proc is not writable"),
    # the same for the report's and the projection's outputs (the output gate): they were
    # a write error after the work (the projection's after its "projecting" line)
    _c(["report", "runs/earlier", "-o", "/proc/hvd-vs-ddp-report.html"],
       "cannot write in folder /proc"),
    _c(["project", "--compute-ms", "40", "--model", "resnet50", "--devices", "8", "-o",
        "/proc/hvd-vs-ddp-projection.json"], "--output", "cannot write in folder /proc"),
    _c(run("--backends", "ddp-mpi", "--world-sizes", "2", "--launchers", "torchrun"),
       "--backends ddp-mpi", "no cell", "--launchers torchrun"),
    # a library named with only launchers that cannot start it above one rank: before,
    # its one-rank cell ran alone, as if it had been compared
    _c(run("--backends", "horovod", "--launchers", "torchrun"), "--backends horovod",
       "no cell at world size 2", "runs under horovodrun"),
    _c(["run", "--resume", "runs/earlier", "--launchers", "torchrun"], "--launchers",
       "cannot change a resumed run"),
    _c(run("--name", "x" * 300), "run name xxxxxxxxxxxxxxxxxxxx...", "300 characters",
       "at most 200"),
    _c(run("--data-dir", "d" * 300), "File name too long"),  # errno's line, exit 2
    # --suites: names the registry knows, of the preset's own, and one that trains
    _c(run("--suites", "thruput"), "unknown suite 'thruput'", "throughput"),
    _c(run("--suites", ""), "--suites", "empty"),
    _c(run("--suites", "gan"), "--suites gan", "quick preset has no gan suite",
       "throughput"),
    _c(run("--preset", "tune", "--suites", "throughput,timeline"), "tune preset has no "
       "timeline suite"),
    _c(run("--suites", "compute,timeline"), "--suites compute,timeline",
       "at least one suite that trains", "convergence"),
    _c(["run", "--resume", "runs/earlier", "--suites", "throughput"], "--suites",
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
        # two CPU hosts over a TCP link (--link-rate): the cluster's options do not apply
        (["runs/earlier", "--link-rate", "1gbit", "--interconnect", "ib-hdr"],
         ("--interconnect belongs to the cluster projection", "--link-rate")),
        (["runs/earlier", "--link-rate", "1gbit", "--devices", "8"],
         ("--devices 8", "two hosts of one rank each")),
        (["runs/earlier", "--link-rate", "1gbit", "-o", "p.json"], ("--output", "prints")),
        (["runs/earlier", "--link-rate", "loopback,1gbit"], ("--link-rate loopback",)),
        (["runs/earlier", "--link-rate", "1gbps"], ("--link-rate",)),
        (["--link-rate", "1gbit"], ("give RUN_DIR",)),
        # no --interconnect: fine on one node, refused where a size spans nodes
        (["runs/earlier", "--devices", "8,16"], ("--interconnect", "16 devices at 8 per node",
                                                 "span 2 nodes")),
        (["runs/earlier", "--devices", "8", "--interconnect", "ib-hdr", "--devices-per-node",
          "0"], ("--devices-per-node", ">= 1")),
        (["runs/earlier", "--devices", "8", "--interconnect", "ib-hdr", "--nics-per-node",
          "two"], ("--nics-per-node",)),
        (["runs/earlier", "--devices", "8", "--interconnect", "ib-hdr", "--algorithm",
          "magic"], ("--algorithm", "ring")),
        (["runs/earlier", "--devices", "8", "--interconnect", "ib-hdr", "--optimizer",
          "adam"], ("--optimizer", "foreach")),
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
        (["runs/earlier", "--devices", "8", "--interconnect", "ib-hdr", "--draws", "1"],
         ("--draws", "at least 40")),
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
        (["--compute-ms", "97", "--model", "resnet50", "--devices", "8", "--interconnect",
          "ib-hdr", "--controller", "nccl"], ("--controller", "'nccl'", "mpi", "gloo")),
        *[(["--compute-ms", "97", "--model", "resnet50", "--devices", "8", "--interconnect",
            "ib-hdr", "--margin", m], ("--margin",)) for m in ("0", "1", "-0.1", "x")],
    )],
    # -- doctor and the command itself
    _c(["doctor", "--only", "ddp-gloo"], "--only", "--selftest"),
    _c(["doctor", "--selftest", "--only", "nope"], "unknown selftest check 'nope'"),
    _c(["doctor", "--selftest", "--only", ""], "--only", "empty"),
    _c(["doctor", "--bogus"], "unrecognized arguments"),
    _c(["bench"], "invalid choice"),
    _c([], "required"),
]


# -- values judged by their owners, outputs never over inputs, bad workload specs
P = ["--devices", "8", "--interconnect", "ib-hdr"]  # a valid projection target
BROKEN = "ext/broken.py"
OWNER_JUDGED: list[Case] = [
    # run: workload parameters, judged by the workload's own declaration
    _c(run("--suite-args", "--workload-param resnet50:image_size=-3"),
       "image_size -3: expected an integer from 8 to 4096"),
    _c(run("--suite-args", "--workload-param resnet50:image_size=64.5"),
       "image_size 64.5: expected an integer"),
    _c(run("--suite-args", "--workload-param resnet50:classes=1"),
       "classes 1: expected an integer from 2"),
    _c(run("--suite-args", "--workload-param deeplabv3:image_size=99999"),
       "image_size 99999", "to 4096"),
    _c(run("--suite-args", "--workload-param gpt:heads=0"), "heads 0: expected an integer"),
    _c(run("--suite-args", "--workload-param gpt:heads=3"), "workload 'gpt' with heads=3",
       "cannot be built"),
    _c(run("--suite-args", "--workload-param mlp:lr=0"), "lr 0: expected a number > 0"),
    _c(run("--suite-args", "--workload-param mlp:lr=nan"), "lr nan: expected a number > 0"),
    _c(run("--suite-args", "--workload-param mlp:batch_size=0"),
       "batch_size 0: expected an integer from 1"),
    _c(run("--suite-args", "--workload-param mlp:depth="), "depth '': expected an integer"),
    _c(run("--suite-args", "--workload-param digits:seed=-1"), "seed -1: expected an integer"),
    _c(run("--workloads", "mlp", "--suite-args", "--workload-param mlp:samples=3"),
       "3 samples", "fewer than one batch"),
    _c(run("--suite-args", "--workload-param resnet50:data_dir=no/such/images"),
       "data_dir", "no such directory"),
    _c(run("--suite-args", "--workload-param resnet50:data_dir=images-empty"),
       "data_dir", "holds no image"),
    # run: suite options that name a file to write
    _c(run("--suite-args", "--horovod-timeline /no/such/dir/t.json"), "--horovod-timeline",
       "/no/such/dir does not exist"),
    _c(run("--suite-args", "--horovod-timeline runs/earlier/manifest.json"),
       "--horovod-timeline", "inside the run directory"),
    _c(run("--suite-args", "--horovod-timeline mine/notes.json"), "--horovod-timeline",
       "not a file hvd-vs-ddp wrote"),
    _c(run("--suite-args", "--horovod-timeline proj/tuned.json"), "--horovod-timeline",
       "a projection, not a Horovod timeline"),
    _c(run("--suite-args", "--horovod-timeline runs"), "--horovod-timeline", "directory"),
    _c(run("--suite-args=--junitxml=runs/earlier/manifest.json"), "--junitxml writes"),
    _c(run("--suite-args=--basetemp=runs/earlier"), "--basetemp writes or deletes"),
    _c(run("--suite-args=--log-file=mine/notes.json"), "--log-file writes"),
    _c(run("--suite-args=--benchmark-json=out.json"), "--benchmark-json writes"),
    _c(run("--suite-args=-o log_file=x.log"), "-o log_file"),
    _c(run("--suite-args=--run-dir runs/earlier"), "--run-dir is set by hvd-vs-ddp run"),
    _c(run("--suite-args=--max-bytes 1099511627776"), "--max-bytes", "must be <= 17179869184"),
    _c(run("--suite-args=--rounds 1000000000"), "--rounds", "must be <= 100000"),
    _c(["run", "--runs-dir", "runs/earlier/cells", "--name", "x"], "inside the run directory"),
    # run: workloads from outside the project, refused before any rank starts
    _c(run("--workloads", "no.such.module:make_workload"), "cannot import module"),
    _c(run("--workloads", "ext/nothere.py:make_workload"), "no such file"),
    _c(run("--workloads", f"{BROKEN}:nope"), "has no function 'nope'"),
    _c(run("--workloads", f"{BROKEN}:returns_a_number"), "returned int", "Workload"),
    _c(run("--workloads", f"{BROKEN}:raises"), "raised RuntimeError"),
    _c(run("--workloads", f"{BROKEN}:unbuildable_model"), "its model cannot be built"),
    _c(run("--workloads", f"{BROKEN}:frozen_model"), "no trainable parameters"),
    _c(run("--workloads", f"{BROKEN}:not_a_module"), "expected a torch.nn.Module"),
    _c(run("--workloads", f"{BROKEN}:wrong_input_size"), "one step on a batch", "fails"),
    _c(run("--workloads", f"{BROKEN}:tiny_data"), "fewer than one batch"),
    _c(run("--workloads", f"{BROKEN}:required_parameter"), "has no default"),
    _c(run("--workloads", "ext/import_error.py:make_workload"), "ModuleNotFoundError"),
    _c(run("--workloads", "torchvision:resnet5000"), "not a torchvision"),
    _c(run("--workloads", "torchvision:vit_b_16", "--suite-args",
           "--workload-param torchvision:vit_b_16:image_size=30"), "image_size=30",
       "cannot be built"),
    _c(run("--workloads", ":make_workload"), "expected NAME, MODULE:FUNCTION"),
    _c(run("--workloads", "mlp", "--suite-args",
           "--workload-param ext/bench.py:make_workload:hidden=0"),
       "hidden 0: expected an integer from 1 to 4096"),
    _c(run("--suite-args", f"--workloads {BROKEN}:nope"), "has no function 'nope'"),
    _c(run("--backends", "ddp-gloo", "--world-sizes", "2", "--suite-args",
           f"--convergence-workloads {BROKEN}:wrong_input_size"), "one step on a batch"),
    _c(run("--resume", "runs/moved-spec"), "--resume runs/moved-spec", "no such file"),
    # report: runs it cannot use (one line each), outputs it must not write
    _c(["report", "runs/no-cells", "-o", "out/r.html"], "cells/ folder is missing"),
    _c(["report", "runs/no-cells-listed", "-o", "out/r.html"], "lists no cells"),
    _c(["report", "runs/results-gone", "-o", "out/r.html"], "none of the results files"),
    _c(["report", "runs/earlier", "-o", "mine/page.html"], "not a file hvd-vs-ddp wrote"),
    _c(["report", "runs/earlier", "-o", "md-mine/report.html"], "report.md",
       "not a file hvd-vs-ddp wrote"),
    _c(["report", "runs/earlier", "-o", "report-tuned/report.html"],
       "an HTML report of", "not of"),
    _c(["report", "runs/earlier", "-o", "verdicts-tuned/report.html"],
       "verdicts.json of", "not of"),
    _c(["report", "runs/earlier", "-o", "runs/tuned/report.html"], "inside the run directory"),
    _c(["report", "runs/earlier", "-o", "afile/report.html"], "is a file, not a folder"),
    _c(["report", "runs/earlier", "-o", "figs-file/report.html"], "report_figures",
       "not a folder"),
    _c(["report", "runs/earlier", "-o", "out/" + "r" * 250 + ".html"], "258 bytes long",
       "at most 255"),
    # project: the same outputs, the same runs, models by spec
    _c(["project", "runs/earlier", *P, "-o", "runs/earlier/manifest.json"],
       "inside the run directory"),
    _c(["project", "runs/earlier", *P, "-o", "runs/earlier/cells/ddp-gloo-single-np1.json"],
       "inside the run directory"),
    _c(["project", "runs/earlier", *P, "-o", "mine/notes.json"], "not a file hvd-vs-ddp wrote"),
    _c(["project", "runs/earlier", *P, "-o", "proj/tuned.json"], "a projection of", "not of"),
    _c(["project", "runs/earlier", *P, "-o", "runs/tuned/projection.json"],
       "projection file of run"),
    _c(["project", "runs/earlier", *P, "-o", "traces/t.horovod-timeline.json"],
       "a Horovod timeline, not a projection"),
    _c(["project", "runs/earlier", *P, "-o", "report-tuned/report.html"],
       "an HTML report, not a projection"),
    _c(["project", "runs/earlier", *P, "-o", "afile/p.json"], "is a file, not a folder"),
    _c(["project", "runs/no-cells", *P], "cells/ folder is missing"),
    _c(["project", "runs/no-cells-listed", *P], "lists no cells"),
    _c(["project", "runs/results-gone", *P], "none of the results files"),
    _c(["project", "--compute-ms", "97", "--model", "no.such.module:f", *P],
       "cannot analyse workload", "cannot import module"),
    _c(["project", "--compute-ms", "97", "--model", f"{BROKEN}:frozen_model", *P],
       "no trainable parameters"),
    _c(["project", "--compute-ms", "97", "--model", "torchvision:resnet5000", *P],
       "not a torchvision"),
    # doctor
    _c(["doctor", "--selftest", "--only", ","], "--only", "without empty entries"),
    _c(["doctor", "--selftest", "--only", "ddp-gloo,,horovod"], "--only", "empty entries"),
    _c(["doctor", "--selftest", "--only", "ddp-gloo,nope"], "unknown selftest check 'nope'"),
    _c(["doctor", "--selftest=yes"], "--selftest", "ignored explicit argument"),
    _c(["doctor", "runs/earlier"], "unrecognized arguments"),
]
CASES += OWNER_JUDGED

# names judged whole (re.fullmatch: `$` matches before a trailing newline), a
# workload's own check after its factory built it, plans that cannot measure a recovery
JUDGED_WHOLE: list[Case] = [
    _c(run("--name", "nightly\n"), "run name", "no path separators"),
    _c(run("--name", "nightly\n.x"), "run name"),
    _c(run("--hosts", "h1\n:2"), "--hosts", "not a host name"),
    _c(run("--workloads", f"{BROKEN}:negative_batch"), "built a Workload it refuses",
       "batch_size must be an integer >= 1, got -4"),
    _c(run("--workloads", f"{BROKEN}:negative_batch_after_build"),
       "returned a Workload it refuses", "batch_size must be an integer >= 1, got -4"),
    _c(run("--preset", "recovery", "--suite-args", "--recovery-commit-every 100"),
       "never comes within the plan's 60 steps", "--recovery-commit-every below"),
    _c(run("--preset", "recovery", "--suite-args", "--recovery-kill-step 5"),
       "before the first commit", "--recovery-kill-step above 10"),
    _c(run("--preset", "recovery", "--suite-args",
           "--recovery-steps 10 --recovery-commit-every 10"), "never comes within"),
]
CASES += JUDGED_WHOLE


def _png(path: Path) -> None:
    """A small readable PNG (an image the loaders read, but not a JPEG)."""
    from PIL import Image

    Image.new("RGB", (8, 8), (120, 30, 200)).save(path)


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
    (root / "images-png" / "cat").mkdir(parents=True)  # readable images, but no JPEG
    _png(root / "images-png" / "cat" / "a.png")
    (root / "images-broken" / "cat").mkdir(parents=True)
    (root / "images-broken" / "cat" / "a.jpg").write_bytes(b"not a jpeg")
    (root / "cifar-partial" / "cifar-10-batches-py").mkdir(parents=True)
    (root / "cifar-partial" / "cifar-10-batches-py" / "data_batch_1").write_bytes(b"x")
    (root / "no-classes").mkdir()
    (root / "afile").write_text("a file, not a directory")
    _issue27(root, man)
    return root


def _issue27(root: Path, man: dict) -> None:
    """Run directories missing what a report needs, files of every kind an output must
    not replace (a report, verdicts.json and a projection of another run carry the
    markers their writers give them: hvd_vs_ddp/common/output_formats.py), the external workload
    files of tests/external as ext/."""
    from hvd_vs_ddp.common import output_formats

    runs = root / "runs"
    shutil.copytree(SMALL, runs / "no-cells", ignore=shutil.ignore_patterns("cells"))
    (runs / "no-cells-listed").mkdir()
    (runs / "no-cells-listed" / "manifest.json").write_text(json.dumps({**man, "cells": []}))
    shutil.copytree(SMALL, runs / "results-gone", ignore=shutil.ignore_patterns("*.json"))
    shutil.copy(SMALL / "manifest.json", runs / "results-gone" / "manifest.json")
    tuned = str((runs / "tuned").resolve())
    moved = {**man, "workloads": [f"{(root / 'ext' / 'gone.py').resolve()}:make_workload"]}
    (runs / "moved-spec").mkdir()
    (runs / "moved-spec" / "manifest.json").write_text(json.dumps(moved))
    for folder, name, text in (
            ("mine", "notes.json", '{"mine": true}'),
            ("mine", "page.html", "<!DOCTYPE html><p>my page</p>"),
            ("md-mine", "report.md", "# my notes, beside where a report would go\n"),
            ("report-tuned", "report.html", "<!DOCTYPE html>" + output_formats.text_marker(
                output_formats.REPORT_HTML, [tuned]) + "<p>the report of runs/tuned</p>"),
            ("verdicts-tuned", "verdicts.json", json.dumps(
                {"format": output_formats.VERDICTS, "format_version": 1, "inputs": [tuned]})),
            ("proj", "tuned.json", json.dumps(
                {"format": output_formats.PROJECTION, "format_version": 1, "inputs": [tuned]}))):
        (root / folder).mkdir(exist_ok=True)
        (root / folder / name).write_text(text)
    (root / "figs-file").mkdir()
    (root / "figs-file" / "report_figures").write_text("a file where the figures go")
    (root / "traces").mkdir()
    shutil.copy(next((ROOT / "tests/fixtures/runs/cpu-why/cells").glob(
        "*.horovod-timeline.json")), root / "traces" / "t.horovod-timeline.json")
    (root / "ext").mkdir()
    shutil.copy(EXTERNAL / "broken_workloads.py", root / "ext" / "broken.py")
    shutil.copy(EXTERNAL / "bench_workload.py", root / "ext" / "bench.py")
    shutil.copy(EXTERNAL / "import_error.py", root / "ext" / "import_error.py")


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
