"""Mutation testing: break one thing every distributed backend must do, in the rank processes.

A check is worth having only if a broken backend fails it. This plugin breaks the
backends' own methods (hvd_vs_ddp/backends/: never torch's or Horovod's) while a suite
test runs; tests/system/test_mutations.py runs the real suites under a real launcher with
it and asserts which tests fail, with which check's message. Loaded only through the
environment of the job that test starts:

    PYTEST_PLUGINS=tests.plugins.mutations HVD_VS_DDP_MUTATIONS=all \
        HVD_VS_DDP_MUTATION_LOG=/tmp/m.jsonl \
        horovodrun -np 2 --mpi python -m pytest suites/test_convergence.py::test_convergence \
        --workloads mlp --convergence-steps 5

Every collected test runs once as it is (the control) and once more per mutation, as
`NAME[PARAMS-mutant-MUTATION]` (one job for all of them: a launch costs more than a tiny test).
The mutation is applied for that test only (pytest's MonkeyPatch, undone after it). Rank 0
appends one JSON line per test to HVD_VS_DDP_MUTATION_LOG: nodeid, mutation (null for the
control), the control's nodeid, outcome, message.
`python -m tests.plugins.mutations` lists the mutations:

no-broadcast   horovod: prepare without hvd.broadcast_parameters / broadcast_optimizer_state;
               ddp-*, zero: DDP built with init_sync=False; fsdp: no initial broadcast.
sum            horovod: op=hvd.Sum instead of hvd.Average; ddp-*, zero: a comm hook that
               allreduces without dividing; fsdp: its reduced gradients times the world
               size before the step (its divide factor needs PREMUL_SUM, not in Gloo).
no-reduction   horovod: the plain optimizer, no DistributedOptimizer; ddp-*, zero: every
               backward inside no_sync(); fsdp: set_requires_gradient_sync(False) always.
one-unreduced  ddp-*, zero, horovod: the model's last parameter (the final bias) keeps this
               rank's own gradient while the rest is averaged: the averaged loss barely
               moves. (fsdp: not applied; its parameters are shards, not replicas.)
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
from typing import Any, Callable

import pytest

MUTATIONS_ENV = "HVD_VS_DDP_MUTATIONS"
LOG_ENV = "HVD_VS_DDP_MUTATION_LOG"
_KEY = pytest.StashKey[str]()


def _no_broadcast(mp: pytest.MonkeyPatch) -> None:
    from hvd_vs_ddp.backends import ddp, horovod, sharded

    mp.setattr(horovod.HorovodBackend, "_broadcast_initial",
               lambda self, model, optimizer: None)
    mp.setattr(ddp._DDPBackend, "init_sync", False)
    mp.setattr(sharded.FSDPBackend, "_broadcast_initial", lambda self, model: None)


def _sum_hook(group, bucket):
    import torch.distributed as dist

    work = dist.all_reduce(bucket.buffer(), group=group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def _sum(mp: pytest.MonkeyPatch) -> None:
    import torch.distributed as dist

    from hvd_vs_ddp.backends import ddp, horovod, sharded

    mp.setattr(horovod.HorovodBackend, "_reduce_op", lambda self: horovod._hvd().Sum)
    mp.setattr(ddp, "comm_hook",
               lambda compression, powersgd_rank=1: (dist.group.WORLD, _sum_hook))
    step = sharded.FSDPBackend.step

    @functools.wraps(step)
    def summed(self, optimizer, scaler=None, before_step=None):
        def times_world() -> None:  # FSDP's divide factor needs PREMUL_SUM, which Gloo lacks
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.grad.mul_(self.world_size)
            if before_step is not None:
                before_step()
        return step(self, optimizer, scaler, times_world)
    mp.setattr(sharded.FSDPBackend, "step", summed)


def _no_reduction(mp: pytest.MonkeyPatch) -> None:
    from torch.nn.parallel import DistributedDataParallel

    from hvd_vs_ddp.backends import base, ddp, horovod, sharded

    mp.setattr(horovod.HorovodBackend, "_distributed_optimizer",
               lambda self, model, optimizer: optimizer)
    mp.setattr(horovod.HorovodBackend, "step", base.Backend.step)  # nothing to synchronize

    @contextlib.contextmanager
    def never_sync(self, model, last):
        if isinstance(model, DistributedDataParallel):
            with model.no_sync():
                yield
        else:
            yield
    mp.setattr(ddp._DDPBackend, "accumulate", never_sync)

    @contextlib.contextmanager
    def fsdp_never_sync(self, model, last):
        model.set_requires_gradient_sync(False)
        yield
    mp.setattr(sharded.FSDPBackend, "accumulate", fsdp_never_sync)


def _keep_local(mp: pytest.MonkeyPatch, cls: type) -> None:
    """cls.prepare hooks the model's last parameter to keep this rank's own gradient;
    cls.step puts it back after the reduction, before the optimizer applies it."""
    prepare, step = cls.prepare, cls.step

    @functools.wraps(prepare)
    def hooked(self, model, optimizer):
        model, optimizer = prepare(self, model, optimizer)
        param, box = list(model.parameters())[-1], {}
        param.register_hook(lambda grad: box.__setitem__("grad", grad.detach().clone()))
        self._mutation_local = (param, box)
        return model, optimizer

    @functools.wraps(step)
    def restoring(self, optimizer, scaler=None, before_step=None):
        def restore() -> None:
            param, box = getattr(self, "_mutation_local", (None, {}))
            if param is not None and param.grad is not None and "grad" in box:
                param.grad.copy_(box["grad"])
            if before_step is not None:
                before_step()
        return step(self, optimizer, scaler, restore)
    mp.setattr(cls, "prepare", hooked)
    mp.setattr(cls, "step", restoring)


def _one_unreduced(mp: pytest.MonkeyPatch) -> None:
    from hvd_vs_ddp.backends import ddp, horovod

    for cls in (ddp._DDPBackend, horovod.HorovodBackend):
        _keep_local(mp, cls)


MUTATIONS: dict[str, tuple[str, Callable[[pytest.MonkeyPatch], None]]] = {
    "no-broadcast": ("the initial broadcast of rank 0's state removed", _no_broadcast),
    "sum": ("gradients summed instead of averaged", _sum),
    "no-reduction": ("gradients never reduced across ranks", _no_reduction),
    "one-unreduced": ("the last parameter keeps each rank's own gradient", _one_unreduced),
}


def selected() -> list[str]:
    """The mutations named by HVD_VS_DDP_MUTATIONS ("all" or a comma list); [] when unset."""
    raw = os.environ.get(MUTATIONS_ENV, "").strip()
    if not raw:
        return []
    names = list(MUTATIONS) if raw == "all" else [n.strip() for n in raw.split(",")]
    unknown = [n for n in names if n not in MUTATIONS]
    if unknown:
        raise pytest.UsageError(f"{MUTATIONS_ENV}: unknown mutation(s) {unknown}; expected "
                                f"'all' or some of {', '.join(MUTATIONS)}")
    return names


def _copy(item: pytest.Function, mutation: str) -> pytest.Function:
    """The same parametrized test with one more id part: `test[PARAMS-mutant-MUTATION]`."""
    callspec = dataclasses.replace(item.callspec,
                                   _idlist=(*item.callspec._idlist, f"mutant-{mutation}"))
    copy = pytest.Function.from_parent(
        item.parent, name=f"{item.originalname}[{callspec.id}]", callspec=callspec,
        callobj=item.obj, fixtureinfo=item._fixtureinfo, originalname=item.originalname,
        keywords=dict(item.keywords))
    copy.stash[_KEY] = mutation
    copy.user_properties += [("mutation", mutation), ("control", item.nodeid)]
    return copy


@pytest.hookimpl(tryfirst=True)  # before suites/conftest.py sorts Horovod's tests last
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    names = selected()
    if names:
        items[:] = [*items, *(_copy(i, m) for m in names for i in list(items)
                               if isinstance(i, pytest.Function) and hasattr(i, "callspec"))]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem):
    mutation = item.stash.get(_KEY, None)
    with pytest.MonkeyPatch.context() as mp:
        if mutation is not None:
            MUTATIONS[mutation][1](mp)
        yield


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Rank 0 logs each test's merged outcome (the collective plugin merged the ranks')."""
    log = os.environ.get(LOG_ENV)
    if not log or (report.when != "call" and report.passed):
        return
    from hvd_vs_ddp.backends.env import detect

    if detect().rank != 0:
        return
    props = dict(report.user_properties)
    with open(log, "a") as fh:
        fh.write(json.dumps({"nodeid": report.nodeid, "mutation": props.get("mutation"),
                             "control": props.get("control", report.nodeid),
                             "when": report.when, "outcome": report.outcome,
                             "message": (report.longreprtext or "")[-3000:]}) + "\n")


def pytest_report_header(config: pytest.Config) -> Any:
    names = selected()
    return f"hvd-vs-ddp mutations: {', '.join(names)}" if names else None


if __name__ == "__main__":
    for key, (what, _) in MUTATIONS.items():
        print(f"{key:14s} {what}")
