"""Makes pytest collective: safe to run on N ranks under any launcher.

suites/conftest.py registers `CollectivePlugin`. On every rank it:
- checks that all ranks collected the same tests in the same order;
- merges each test phase's outcome across ranks, so that a failure (or a skip)
  on one rank is the outcome on every rank, naming the rank and its message;
- arms a per-test time limit: a rank stuck past it prints which rank and which
  test, dumps its stacks and exits, and the launcher ends the other ranks
  (a C-level faulthandler backstop fires even if the GIL is held);
- lets only rank 0 write pytest-benchmark's JSON (atomically: temporary file,
  then rename; a write that fails, e.g. on a full disk, renames nothing, so the
  previous file stays) and print; the other ranks run quietly;
- has every rank say which process it is (hvd_vs_ddp/harness/rank_started.py), so that a
  launcher naming a dead process by PID can be read as a rank.

Ranks talk through the job's TCPStore (hvd_vs_ddp.backends.rendezvous.job_store), which
exists independently of the backend under test.

    horovodrun -np 4 pytest suites/        # or torchrun / mpirun / srun / plain pytest
    pytest suites/ --test-time-limit 300   # seconds per test on every rank
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import faulthandler
import hashlib
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hvd_vs_ddp.backends.env import LauncherEnv, detect
from hvd_vs_ddp.common import values
from hvd_vs_ddp.common.process_exit import flush_streams, hard_exit
from hvd_vs_ddp.harness import rank_started

DEFAULT_TIME_LIMIT_S = 900.0
WAIT_GRACE_S = 15.0  # a rank waiting for a stuck peer lets the peer report first
END_GRACE_S = 30.0  # how long a finished rank waits for the others at the session's end


class CollectiveTimeout(RuntimeError):
    pass


class Coordinator:
    """all_gather of small JSON values through the job store, with a deadline."""

    def __init__(self, env: LauncherEnv, timeout_s: float) -> None:
        self.env = env
        self.timeout_s = timeout_s
        self.counter = 0
        self.waiting: str | None = None  # what gather() is waiting for, if anything
        self.store = None
        if env.world_size > 1:
            from torch.distributed import PrefixStore

            from hvd_vs_ddp.backends.rendezvous import job_store

            td = datetime.timedelta(seconds=timeout_s)
            self.store = PrefixStore("hvd_vs_ddp/pytest", job_store(env, td))

    def gather(self, value: Any, what: str = "a collective step",
               timeout_s: float | None = None) -> list[Any]:
        if self.store is None:
            return [value]
        self.counter += 1
        prefix = f"g{self.counter}"
        self.store.set(f"{prefix}/{self.env.rank}", json.dumps(value))
        keys = [f"{prefix}/{r}" for r in range(self.env.world_size)]
        deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
        self.waiting = what
        try:
            while True:
                missing = self.missing(keys)
                if not missing:
                    break
                if time.monotonic() > deadline:
                    raise CollectiveTimeout(
                        f"rank(s) {', '.join(map(str, missing))} did not reach {what} "
                        f"within {self.timeout_s:.0f}s (stuck or dead)")
                time.sleep(0.005)
            return [json.loads(self.store.get(k)) for k in keys]
        finally:
            self.waiting = None
            self._keys = keys

    def missing(self, keys: list[str] | None = None) -> list[int]:
        keys = keys or getattr(self, "_keys", [])
        store = self.store
        if store is None:  # one rank: nobody to wait for
            return []
        return [r for r, k in enumerate(keys) if not store.check([k])]


class Watchdog:
    """Ends this rank, loudly, when one test runs past its time limit."""

    def __init__(self, env: LauncherEnv, coord: Coordinator | None = None,
                 config: pytest.Config | None = None) -> None:
        self.env = env
        self.coord = coord
        self.config = config
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def arm(self, nodeid: str, limit_s: float) -> None:
        self.disarm()
        timer = threading.Timer(limit_s, self._expire, args=(nodeid, limit_s))
        timer.daemon = True
        with self._lock:
            self._timer = timer
        timer.start()
        # Backstop in C: fires even when a thread holds the GIL forever.
        faulthandler.dump_traceback_later(limit_s + WAIT_GRACE_S + 30, exit=True)

    def disarm(self) -> None:
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
        faulthandler.cancel_dump_traceback_later()

    def _uncaptured(self) -> None:
        """pytest captures fd 2 during a test: give it back so the message is seen."""
        capman = self.config.pluginmanager.getplugin("capturemanager") if self.config else None
        if capman is not None:
            try:
                capman.suspend_global_capture(in_=True)
            except Exception:  # capture already suspended or not active
                pass

    def _expire(self, nodeid: str, limit_s: float) -> None:
        self._uncaptured()
        who = (f"rank {self.env.rank} of {self.env.world_size} "
               f"(host {socket.gethostname()}, pid {os.getpid()})")
        coord = self.coord
        if coord is not None and coord.waiting is not None:
            # This rank finished and waits for a peer: let the stuck peer's own
            # watchdog speak (and the launcher end us), then name it ourselves.
            time.sleep(WAIT_GRACE_S)
            late = coord.missing()
            msg = (f"\nhvd-vs-ddp: {who} waited {limit_s + WAIT_GRACE_S:.0f}s in {nodeid} "
                   f"for rank(s) {', '.join(map(str, late)) or '?'} (stuck or dead); "
                   "aborting the job\n")
            os.write(2, msg.encode())
            os._exit(70)
        msg = (f"\nhvd-vs-ddp: {who} is stuck in {nodeid}: "
               f"time limit {limit_s:.0f}s exceeded; aborting the job\n")
        os.write(2, msg.encode())
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        os._exit(70)


def _short(rep: pytest.TestReport) -> str:
    if rep.skipped and isinstance(rep.longrepr, tuple):
        return str(rep.longrepr[2])
    text = getattr(rep, "longreprtext", "") or ""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    err = [ln for ln in lines if ln.startswith("E ")]
    return " | ".join((err or lines)[-3:])[:600]


class CollectivePlugin:
    def __init__(self, config: pytest.Config, env: LauncherEnv | None = None) -> None:
        self.config = config
        self.env = env or detect()
        self.limit_s = float(config.getoption("test_time_limit") or DEFAULT_TIME_LIMIT_S)
        # A phase may wait for a slow peer up to the whole test limit (+ margin).
        self.coord = Coordinator(self.env, self.limit_s + 60)
        self.watchdog = Watchdog(self.env, self.coord, config)
        self.final_json: Path | None = None
        self.exitstatus: int | None = None

    @property
    def rank(self) -> int:
        return self.env.rank

    # -- configure: only rank 0 writes and prints -------------------------
    def configure(self) -> None:
        opt = self.config.option
        json_path = getattr(opt, "benchmark_json", None)
        if json_path is not None and hasattr(json_path, "write"):
            json_path.close()  # pytest-benchmark < 5.3 gives an open file
            json_path = json_path.name
        if self.rank != 0:
            opt.benchmark_json = None
            opt.benchmark_autosave = False
            opt.benchmark_save = None
            opt.benchmark_histogram = None
        elif json_path:
            self.final_json = Path(json_path)
            name = f".{self.final_json.name}.partial-{os.getpid()}"
            partial = self.final_json.with_name(name)
            opt.benchmark_json = partial if isinstance(opt.benchmark_json, Path) \
                else open(partial, "wb")  # noqa: SIM115 - pytest-benchmark closes it

    def unconfigure(self) -> None:
        self.watchdog.disarm()
        if self.final_json is not None:
            partial = self.config.option.benchmark_json
            partial = Path(partial.name if hasattr(partial, "write") else partial)
            if partial.exists() and self.exitstatus is not None:
                os.replace(partial, self.final_json)  # the session ended: the JSON is whole
            elif partial.exists():
                # pytest-benchmark's write failed (a full disk: the hook raised before
                # pytest_sessionfinish got here) or no session ran: never publish a
                # half-written file over the previous one
                partial.unlink()
        if self.exitstatus is not None:
            # Rank 0 has printed the session's summary by now: push it out, and let no
            # rank leave before every rank got here, or the launcher, seeing one rank end
            # with a failure status, kills rank 0 before its summary reaches the pipe.
            flush_streams()
            # Best effort: a dead peer (timeout) or rank 0's store already gone (it left
            # first, having seen everyone) must not turn the end into a traceback.
            with contextlib.suppress(Exception):
                self.coord.gather(self.exitstatus, "the end of the session",
                                  timeout_s=END_GRACE_S)
            hard_exit(self.exitstatus)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus) -> None:
        self.exitstatus = int(exitstatus)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.rank != 0:  # rank 0 reports for everybody (outcomes are merged)
            reporter = self.config.pluginmanager.getplugin("terminalreporter")
            if reporter is not None:
                self.config.pluginmanager.unregister(reporter)

    # -- same tests in the same order -----------------------------------
    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        ids = "\n".join(item.nodeid for item in session.items)
        digest = hashlib.sha256(ids.encode()).hexdigest()[:16]
        everyone = self.coord.gather([digest, len(session.items)], "collection")
        if len({d for d, _ in everyone}) > 1:
            detail = ", ".join(f"rank {r}: {n} tests ({d})" for r, (d, n) in enumerate(everyone))
            raise pytest.UsageError(f"ranks collected different tests: {detail}")

    # -- a time limit per test ------------------------------------------
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem):
        marker = item.get_closest_marker("time_limit")
        limit = float(marker.args[0]) if marker else self.limit_s
        self.watchdog.arm(item.nodeid, limit)
        try:
            yield
        finally:
            self.watchdog.disarm()

    # -- one outcome for all ranks --------------------------------------
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        outcome = yield
        rep: pytest.TestReport = outcome.get_result()
        if self.env.world_size == 1:
            return
        what = f"{item.nodeid} ({call.when})"
        try:
            everyone = self.coord.gather([rep.outcome, _short(rep)], what)
        except CollectiveTimeout as exc:
            rep.outcome, rep.longrepr = "failed", f"rank {self.rank}: {exc}"
            return
        outcomes = {o for o, _ in everyone}
        if outcomes == {rep.outcome} and rep.outcome != "failed":
            return
        failed = [(r, m) for r, (o, m) in enumerate(everyone) if o == "failed"]
        if failed:
            others = "\n".join(f"rank {r} failed: {m}" for r, m in failed if r != self.rank)
            if rep.outcome == "failed":
                if others:
                    rep.sections.append(("other ranks", others))
                return
            rep.outcome, rep.longrepr = "failed", others
            return
        # No failure, but ranks disagree (some skipped, some passed): a bug in the test.
        detail = "; ".join(f"rank {r} {o}" + (f" ({m})" if m else "")
                           for r, (o, m) in enumerate(everyone))
        rep.outcome, rep.longrepr = "failed", f"ranks disagree on the outcome: {detail}"


def _seconds(text: str) -> float:
    """--test-time-limit's type: a finite number of seconds > 0 (nan and inf refused)."""
    try:
        return values.seconds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from None


def addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hvd-vs-ddp collective")
    group.addoption("--test-time-limit", type=_seconds, default=None,
                    help=f"seconds per test on every rank before the job is aborted "
                         f"(default {DEFAULT_TIME_LIMIT_S:.0f})")


def register(config: pytest.Config) -> CollectivePlugin:
    config.addinivalue_line("markers", "time_limit(seconds): per-test time limit")
    plugin = CollectivePlugin(config)
    plugin.configure()
    rank_started.announce(plugin.env)  # "rank R of N started: pid P on host H"
    config.pluginmanager.register(plugin, "hvd_vs_ddp_collective")
    return plugin
