"""CPU per test of a test tier, the processes it started included: where the test
command's time goes, test by test (beside benchmarks/tier_processes.sh, which splits the
same CPU by process).

A pytest plugin: around each test it reads the worker's own CPU and that of every child
process the worker waited for (getrusage RUSAGE_CHILDREN: launchers wait for their ranks,
so a launch's ranks count; processes nobody waited for, such as ranks a test killed, do
not). Each pytest-xdist worker appends one line per test to the file named by
HVD_VS_DDP_TEST_CPU (default: test-cpu.txt); a shared job's CPU goes to the test that
started it. Then the same file, summed and sorted:

    HVD_VS_DDP_TEST_CPU=/tmp/cpu.txt python -m pytest tests/system --system-tier core -n 2 \\
        -p benchmarks.tier_tests_cpu -p no:cacheprovider -q
    python benchmarks/tier_tests_cpu.py /tmp/cpu.txt [--top 30]
"""
from __future__ import annotations

import argparse
import os
import resource
from collections.abc import Iterator

import pytest

FILE_ENV = "HVD_VS_DDP_TEST_CPU"


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    before = _cpu()
    yield
    after = _cpu()
    with open(os.environ.get(FILE_ENV, "test-cpu.txt"), "a") as out:
        out.write(f"{after[0] - before[0]:.2f} {after[1] - before[1]:.2f} {item.nodeid}\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="CPU seconds per test, from the plugin's file")
    ap.add_argument("file")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args(argv)
    rows = []
    with open(args.file) as f:
        for line in f:
            own, kids, test = line.rstrip("\n").split(" ", 2)
            rows.append((float(own) + float(kids), float(own), test))
    rows.sort(reverse=True)
    print(f"{'CPU-s':>7s} {'own':>6s}  test")
    for total, own, test in rows[:args.top]:
        print(f"{total:7.1f} {own:6.1f}  {test}")
    print(f"{sum(r[0] for r in rows):7.1f} {sum(r[1] for r in rows):6.1f}  all {len(rows)} tests")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
