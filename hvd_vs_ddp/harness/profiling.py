"""torch.profiler over a few extra steps of a throughput test: one Chrome trace per rank.

`--profile-steps N` (hvd_vs_ddp/harness/options.py; `hvd-vs-ddp run --profile` gives 3) runs N more
optimizer steps after the timed rounds of every throughput test, under torch.profiler
(CPU activity; CUDA too where a GPU is used), each step inside a
`record_function("hvd_vs_ddp.step#K")` marker so that a reader finds the steps. The
profiler slows what it watches, so these steps never enter a timing or a loss: they
come after the timed rounds, and after the losses were gathered. Each rank writes its
own trace beside the results file (`--benchmark-json`), as
`<stem>.<workload>.<knob set>.rank<R>.profile.json`; a Chrome trace opens in Perfetto
or chrome://tracing, and hvd_vs_ddp/reports/profile_trace.py turns it into computation,
communication, their overlap and idle time per rank and step.

What the trace can see: DDP's collectives (Gloo's worker threads annotate
`gloo:all_reduce`, c10d's ops `c10d::allreduce_`), every aten op of forward, backward
and the optimizer. Horovod's collectives run in its own C++ background thread that the
profiler never sees; the Horovod backend marks the training thread's wait for them
(`horovod:synchronize`, hvd_vs_ddp/backends/horovod.py), so for Horovod the profiler's
communication is the exposed part only (its hidden part: the timeline, README "Why one
is faster").

    pytest suites/test_throughput.py --profile-steps 3 --benchmark-json out.json
    # -> out.gpt.default.rank0.profile.json, ...
"""
from __future__ import annotations

import os
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from hvd_vs_ddp.common import output_formats
from hvd_vs_ddp.common.run_folder import check_output
from hvd_vs_ddp.workloads.external import slug

STEP_MARK = "hvd_vs_ddp.step#"
SUFFIX = ".profile.json"


def trace_name(stem: str, workload: str, knob_set: str, rank: int) -> str:
    """The trace's file name; a workload spec appears in its file-name-safe form."""
    return f"{stem}.{slug(workload)}.{knob_set}.rank{rank}{SUFFIX}"


def folder_and_stem(benchmark_json: str | os.PathLike | None) -> tuple[Path, str]:
    """Where traces go: beside the results file, or the current folder without one."""
    if benchmark_json is None:
        return Path.cwd(), "profile"
    path = Path(benchmark_json).resolve()
    return path.parent, path.stem


def profile_steps(trainer, steps: int, path: Path, use_cuda: bool,
                  owner: str | None = None) -> Path:
    """Run `steps` optimizer steps of `trainer` under torch.profiler; write the trace (the
    output gate: it may replace only a trace, and lie in a run directory only when
    `owner`, the cell's --run-dir, is that run)."""
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if use_cuda else [])
    with profile(activities=activities) as prof:
        for k in range(steps):
            with record_function(f"{STEP_MARK}{k}"):
                trainer.step()
    check_output(path, output_formats.PROFILER_TRACE, owner)
    tmp = path.with_name(path.name + ".tmp")
    prof.export_chrome_trace(str(tmp))
    os.replace(tmp, path)  # a reader never sees half a trace
    return path


def cuda_in_use(device: torch.device) -> bool:
    return device.type == "cuda"
