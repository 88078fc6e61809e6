"""The `spawn` launcher: N ranks started by torch.multiprocessing.spawn from one parent.

This is how Lightning's ddp_spawn strategy starts DDP: one Python process imports
torch, then spawns N fresh interpreters (start method "spawn") that each run the
training as one rank. Here each child runs the rest of the command line as `python`
would (`-m MODULE args...` or `SCRIPT args...`, e.g. `-m pytest suites/`), with the
rank variables set (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
MASTER_PORT, and HVD_VS_DDP_SPAWNED for hvd_vs_ddp/backends/env.py). The parent serves the job's
TCPStore (as torchrun's agent does) on a port the kernel picks. HVD_VS_DDP_LAUNCH_T0,
the time the launch began, reaches every rank so that its start-up time is measured
like under every other launcher (suites/conftest.py). The exit status is the first
failed rank's, else 0.

    python -m hvd_vs_ddp.harness.spawn_ranks 2 -m pytest suites/ --backends ddp-gloo
"""
from __future__ import annotations

import datetime
import os
import runpy
import sys
import time

from hvd_vs_ddp.harness.startup import LAUNCH_T0

MARKER = "HVD_VS_DDP_SPAWNED"
STORE_SERVED = "HVD_VS_DDP_LAUNCHER_STORE"  # "1": the launcher serves the TCPStore


def rank_env(rank: int, nprocs: int, port: int) -> dict[str, str]:
    return {"RANK": str(rank), "WORLD_SIZE": str(nprocs), "LOCAL_RANK": str(rank),
            "LOCAL_WORLD_SIZE": str(nprocs), "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port), MARKER: "1", STORE_SERVED: "1"}


def run_argv(argv: list[str]) -> int:
    """Run `python argv...` in this process; its exit status."""
    try:
        if argv[:1] == ["-m"]:
            sys.argv = [argv[1], *argv[2:]]
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    return 0


def _rank_main(rank: int, nprocs: int, port: int, argv: list[str]) -> None:
    os.environ.update(rank_env(rank, nprocs, port))
    code = run_argv(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    if code:
        os._exit(code)  # spawn reports the exit code; no traceback of a SystemExit


def main(args: list[str]) -> int:
    if len(args) < 2 or not args[0].isdigit() or int(args[0]) < 1:
        print("usage: python -m hvd_vs_ddp.harness.spawn_ranks N (-m MODULE | SCRIPT) [ARGS...]",
              file=sys.stderr)
        return 2
    os.environ.setdefault(LAUNCH_T0, repr(time.time()))
    nprocs, argv = int(args[0]), args[1:]
    import torch.multiprocessing as mp
    from torch.distributed import TCPStore

    store = TCPStore("127.0.0.1", 0, None, is_master=True, wait_for_workers=False,
                     timeout=datetime.timedelta(seconds=600))
    try:
        mp.spawn(_rank_main, args=(nprocs, store.port, argv), nprocs=nprocs, join=True)
    except mp.ProcessExitedException as exc:
        print(f"hvd-vs-ddp: spawn: rank {exc.error_index} exited with {exc.exit_code}",
              file=sys.stderr)
        return exc.exit_code if exc.exit_code and exc.exit_code > 0 else 1
    except mp.ProcessRaisedException as exc:
        print(f"hvd-vs-ddp: spawn: rank {exc.error_index} raised:\n{exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
