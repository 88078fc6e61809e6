"""The input-pipeline axis: the JPEG set, the loop's waits, the host CPU
accounting, the record's fields, the matrix axis and the options.

One process throughout: the host pipeline's DataLoader workers are real worker processes
(a real process is what their CPU accounting measures), the training runs on the
`single` backend (what each library adds on top is measured by the suites, not here).

    python -m pytest tests/unit/test_input_pipeline.py -q
"""
from __future__ import annotations

import dataclasses
import multiprocessing
import threading
import time

import pytest
import torch

from hvd_vs_ddp.backends import registry as backends
from hvd_vs_ddp.cli import cell_command, matrix, presets
from hvd_vs_ddp.cli.cell import Cell
from hvd_vs_ddp.common.errors import InputError
from hvd_vs_ddp.common.input_modes import INPUT_MODES
from hvd_vs_ddp.harness import option_parsing, options
from hvd_vs_ddp.harness.host_cpu import MAIN, OTHER, HostCpu
from hvd_vs_ddp.results_schema import ThroughputRecord
from hvd_vs_ddp.results_schema.errors import ResultsError
from hvd_vs_ddp.results_schema.manifest import CellEntry
from hvd_vs_ddp.workloads import jpeg_set
from hvd_vs_ddp.workloads import registry as workloads
from hvd_vs_ddp.workloads.loop import TrainConfig, Trainer

SMALL = "torchvision:squeezenet1_1"  # the smallest image classifier at hand


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HVD_VS_DDP_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _small(**kw):
    return workloads.get(SMALL, **{"image_size": 32, "batch_size": 4, "samples": 16,
                                   "classes": 4, **kw})


# -- the JPEG set -------------------------------------------------------------------
def test_the_synthetic_set_is_made_once_and_decodes_to_the_workloads_crops(cache):
    ds = jpeg_set.dataset_for(_small(), source_size=48)
    assert ds.root == cache / "jpeg" / "16x48px-c4-s0" and len(ds) == 16 and ds.classes == 4
    x, y = ds[5]
    assert x.shape == (3, 32, 32) and x.dtype == torch.float32
    labels = [label for _, label in ds.files]  # class folders in order, 4 images each
    assert labels == sorted(labels) == [c for c in range(4) for _ in range(4)] and y == 1
    info = jpeg_set.describe(ds)
    assert info["source_px"] == [48, 48] and info["images"] == 16 and info["mean_file_kb"] > 0
    stamp = (ds.root / jpeg_set.DONE).stat().st_mtime_ns
    again = jpeg_set.dataset_for(_small(), source_size=48)
    assert again.root == ds.root and (ds.root / jpeg_set.DONE).stat().st_mtime_ns == stamp
    assert not [p for p in ds.root.parent.iterdir() if p.name.startswith(".")]  # no leftovers


def test_the_default_source_is_twice_the_image_size(cache):
    assert jpeg_set.dataset_for(_small()).root.name == "16x64px-c4-s0"


def test_a_user_folder_without_jpegs_and_a_non_image_workload_are_one_line(tmp_path):
    (tmp_path / "cat").mkdir()
    (tmp_path / "cat" / "a.png").write_bytes(b"")
    with pytest.raises(InputError, match="holds no JPEG"):
        jpeg_set.list_files(tmp_path)
    with pytest.raises(InputError, match="labelled images"):
        jpeg_set.image_shape(workloads.get("gpt"))
    with pytest.raises(InputError, match="labelled images"):
        jpeg_set.image_shape(workloads.get("deeplabv3"))  # a label per pixel


def test_the_input_modes_have_one_owner():
    """Defined once (common/input_modes.py); the results format, the options and the CLI
    read that tuple, and the trainer and the feed refuse anything else with one check."""
    from hvd_vs_ddp.harness import options
    from hvd_vs_ddp.results_schema.kinds import training

    assert INPUT_MODES == ("memory", "jpeg", "device") and presets.DEFAULT_INPUT == "device"
    assert not hasattr(jpeg_set, "INPUT_MODES") and training.INPUT_MODES is INPUT_MODES
    assert options.INPUT_MODES is INPUT_MODES


# -- the loop: waits, workers -----------------------------------------------------------
def _trainer(mode: str, workers: int, jpeg_size: int = 48) -> Trainer:
    backend = backends.create("single").setup()
    config = TrainConfig(steps=1, input_mode=mode, num_workers=workers, jpeg_size=jpeg_size)
    return Trainer(_small(), backend, config)


def test_the_host_pipeline_trains_and_each_step_records_its_wait(cache):
    trainer = _trainer("jpeg", 1, jpeg_size=320)  # decoding work that CPU clocks see
    assert trainer.input_set is not None and trainer.input_set["images"] == 16
    cpu = HostCpu(trainer.loader_pids)
    trainer.run(1)  # starts the worker
    pids = trainer.loader_pids()
    assert len(pids) == 1 and pids[0] != multiprocessing.current_process().pid
    cpu.start()
    trainer.run(8)  # two epochs: the worker decodes while the steps run
    used = cpu.stop()
    assert len(trainer.data_waits) == len(trainer.step_times) == 9
    assert all(w >= 0 for w in trainer.data_waits) and max(trainer.data_waits) > 0
    assert used["loader_workers"] == 1 and used["loader_cpu_cores"] > 0  # it decoded
    assert used["host_cpu_cores"] > 0 and MAIN in used["threads"]


def test_memory_input_keeps_the_workloads_tensors():
    trainer = _trainer("memory", 0)
    trainer.run(2)
    assert trainer.input_set is None and trainer.loader_pids() == []
    assert len(trainer.data_waits) == 2


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="input mode must be one of"):
        TrainConfig(input_mode="gpu")


# -- host CPU: who used the cores ------------------------------------------------------
def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_host_cpu_of_a_window_of_milliseconds_is_not_zero():
    """The process's CPU over a window shorter than /proc's 10 ms tick (a tiny suite's
    2 steps): read in ticks it was 0 cores (or a whole tick, 2 cores), which failed
    test_suites_under_launcher[single-np1] once in a fresh clone."""
    windows = []
    for _ in range(5):  # read in ticks, five 2 ms windows were all nonzero ~1 time in 3000
        cpu = HostCpu()
        cpu.start()
        _spin_cpu(0.002)  # 2 ms of this thread's CPU, however long a busy host makes it
        windows.append(cpu.stop()["host_cpu_cores"])
    assert all(cores > 0 for cores in windows), windows


def _spin_cpu(seconds: float) -> None:
    """Use `seconds` of this thread's CPU (a known input: preemption on a loaded host
    stretches the wall time, never the CPU used)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_host_cpu_tells_main_thread_other_threads_and_loader_workers_apart():
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=_spin, args=(1.5,))
    child.start()
    done = threading.Event()
    helper = threading.Thread(target=lambda: (_spin(0.6), done.wait()))
    try:
        cpu = HostCpu(lambda: [child.pid])
        cpu.start()
        helper.start()
        _spin(0.6)
        used = cpu.stop()  # the helper still lives: a thread's CPU is read while it does
    finally:
        done.set()
        helper.join()
        child.join()
    # on a loaded 2-core host each spinner gets a share (the two threads share the GIL)
    assert used["threads"][MAIN] > 0.02 and used["threads"][OTHER] > 0.02
    assert used["loader_cpu_cores"] > 0.05 and used["loader_workers"] == 1
    assert used["host_cpu_cores"] == pytest.approx(
        sum(used["threads"].values()), abs=0.1)
    with pytest.raises(RuntimeError):
        HostCpu().stop()


# -- the record ------------------------------------------------------------------------
def _record(**extra) -> dict:
    return ThroughputRecord(
        backend="ddp-gloo", world_size=2, launcher="torchrun", workload="resnet50",
        knobs={}, per_rank_batch=4, global_batch=8, step_times=[0.1, 0.2],
        samples_per_s=[80.0, 40.0], **extra).to_dict()


def test_the_contract_fields_round_trip_and_are_checked():
    d = _record(input_mode="jpeg", loader_workers=2, pin_memory=False,
                data_wait_s=[0.01, 0.02], host_cpu_cores=0.9, loader_cpu_cores=0.4,
                input_pipeline={"cores": 2, "jpeg_set": None, "ranks": [
                    {"rank": 0, "host_cpu_cores": 0.9, "loader_cpu_cores": 0.4,
                     "threads": {MAIN: 0.8, OTHER: 0.1}, "data_wait_s": [0.01, 0.02]}]})
    rec = ThroughputRecord.from_dict(d, where="x")
    assert rec.to_dict() == d
    row = rec.rows()[0]
    assert row["input_mode"] == "jpeg" and list(row["data_wait"]) == [0.01, 0.02]
    for bad, words in ((dict(d, input_mode="gpu"), "input_mode"),
                       (dict(d, data_wait_s=[0.1]), "data_wait_s"),
                       (dict(d, host_cpu_cores=-1), "host_cpu_cores")):
        with pytest.raises(ResultsError, match=words):
            ThroughputRecord.from_dict(bad, where="x")


def test_a_record_before_the_fields_reads_as_memory():
    row = ThroughputRecord.from_dict(_record(), where="x").rows()[0]
    assert row["input_mode"] == "memory" and row["data_wait"] is None


# -- the matrix axis -------------------------------------------------------------------
def _quick(inputs, **kw):
    return dataclasses.replace(presets.preset("quick"), inputs=inputs, **kw)


def test_each_timed_cell_gets_a_twin_per_input_mode():
    base = matrix.cells(_quick(("device",)), ["ddp-gloo"], [2])
    assert base == matrix.cells(presets.preset("quick"), ["ddp-gloo"], [2])  # the default
    both = matrix.cells(_quick(("device", "memory", "jpeg")), ["ddp-gloo"], [2])
    assert [c for c in both if c.input == "device"] == base  # the default's cells unchanged
    memory = {c.id for c in both if c.input == "memory"}
    assert memory == {"ddp-gloo-torchrun-np2-memory", "compute-only-torchrun-np2-memory"}
    jpeg = {c.id: c for c in both if c.input == "jpeg"}
    assert set(jpeg) == {"ddp-gloo-torchrun-np2-jpeg", "compute-only-torchrun-np2-jpeg"}
    assert jpeg["ddp-gloo-torchrun-np2-jpeg"].suites == ("throughput",)
    assert jpeg["compute-only-torchrun-np2-jpeg"].suites == ("compute",)
    opts = cell_command.cell_options(jpeg["ddp-gloo-torchrun-np2-jpeg"], _quick(("jpeg",)))
    assert opts.input == ("jpeg",)
    assert cell_command.cell_options(base[0], _quick(("device",))).input == ("device",)


def test_without_memory_the_other_suites_still_run_once_and_twins_go():
    cells = matrix.cells(_quick(("jpeg",)), ["ddp-gloo", "ddp-mpi"], [2])
    ids = {c.id: c.suites for c in cells}
    assert ids["ddp-gloo-torchrun-np2-jpeg"] == ("throughput",)
    assert ids["ddp-gloo-torchrun-np2"] == ("convergence", "collectives")
    assert "compute-only-torchrun-np2" not in ids and not any("timeline" in i for i in ids)


def test_a_cells_input_survives_the_manifest():
    cell = Cell("ddp-gloo", "torchrun", 2, ("throughput",), input="jpeg")
    entry = CellEntry.pending(**cell.as_dict())
    assert entry.input == "jpeg" and Cell.from_dict(entry.to_dict()) == cell
    plain = Cell("ddp-gloo", "torchrun", 2, ("throughput",))
    entry = CellEntry.pending(**plain.as_dict()).to_dict()
    assert entry["input"] == "device" and Cell.from_dict(entry) == plain  # always written
    del entry["input"]  # a manifest from before input modes were named read "memory"
    legacy = Cell.from_dict(entry)
    assert legacy.input == "memory" and legacy.id == plain.id  # and keeps its id
    assert "input" not in CellEntry.pending(**legacy.as_dict()).to_dict()  # as it was
    assert Cell.from_dict(CellEntry.pending(**legacy.as_dict()).to_dict()).id == plain.id


# -- the options -----------------------------------------------------------------------
def test_the_suite_options_are_checked_up_front():
    opts = options.SuiteOptions(input=("memory", "jpeg"), workloads=("resnet50", "gpt"))
    assert opts.to_argv()[:2] == ["--input", "memory,jpeg"]
    with pytest.raises(InputError, match="unknown input 'jpg'"):
        options.SuiteOptions(input=("jpg",))
    with pytest.raises(InputError, match="labelled images"):
        options.SuiteOptions(input=("jpeg",), workloads=("gpt",))
    with pytest.raises(InputError, match="unknown pin memory"):
        options.SuiteOptions(pin_memory="yes")
    given, _ = option_parsing.parse_argv("--input jpeg --loader-workers 3")
    assert given == {"input": ("jpeg",), "loader_workers": 3}
    with pytest.raises(InputError, match="chosen per cell"):
        option_parsing.refuse_per_cell(given)
