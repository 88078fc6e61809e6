"""Every bad input of tests/bad_inputs.py through the real `hvd-vs-ddp` command, as a
Markdown table: input | exit | stderr | files changed (with `--owner-judged`: input | the one
error line | exit | hash of the input run before | after).

Each case runs as `python -m hvd_vs_ddp.cli ARGS` in a working directory that holds a
copy of a recorded run and some broken inputs (tests/bad_inputs.py: workdir); the
directory's tree hash (every path, mode and byte) is taken before and after. "files
changed" is "none" when the hashes are equal. A run writes its manifest before its
first cell starts, so an unchanged tree also means no cell was started (the in-process
test, tests/unit/test_cli_errors.py, checks that directly with a tripwire). With
`--owner-judged` only the cases of tests/bad_inputs.py's OWNER_JUDGED run, and the
table shows the sha256 tree hash of the input run (runs/earlier, the run most cases
name) before and after each case; the whole working directory is still compared. The
last line sums up; the exit status is 1 if any case was not refused with exit 2 and one
line "hvd-vs-ddp: error: ..." or changed a file.

    python benchmarks/bad_inputs_table.py            # about 2-4 s per case on 2 cores
    python benchmarks/bad_inputs_table.py -j 4 > bad-inputs.md
    python benchmarks/bad_inputs_table.py --owner-judged -j 2 > owner-judged-bad-inputs.md
"""
from __future__ import annotations

import argparse
import os
import queue
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.bad_inputs import CASES, OWNER_JUDGED, Case, tree_hash, workdir  # noqa: E402

INPUT_RUN = Path("runs") / "earlier"  # the run the cases read (and must not change)


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def try_case(case: Case, root: Path) -> tuple[Case, int, list[str], bool, str, str]:
    before, run_before = tree_hash(root), tree_hash(root / INPUT_RUN)
    proc = subprocess.run([sys.executable, "-m", "hvd_vs_ddp.cli", *case.argv], cwd=root,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
                          text=True, timeout=300)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    return (case, proc.returncode, lines, tree_hash(root) != before, run_before,
            tree_hash(root / INPUT_RUN))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-j", "--jobs", type=int, default=1, help="cases run at once")
    ap.add_argument("--owner-judged", action="store_true",
                    help="only the values their owners judge (OWNER_JUDGED), with the "
                    "input run's hash before and after each")
    args = ap.parse_args(argv)
    cases = OWNER_JUDGED if args.owner_judged else CASES
    with tempfile.TemporaryDirectory(prefix="hvd-vs-ddp-bad-inputs-") as tmp:
        free: queue.Queue[Path] = queue.Queue()
        for i in range(max(args.jobs, 1)):  # one working directory per case in flight
            free.put(workdir(Path(tmp) / f"w{i}"))

        def one(case: Case):
            root = free.get()
            try:
                return try_case(case, root)
            finally:
                free.put(root)
        with ThreadPoolExecutor(max(args.jobs, 1)) as pool:
            results = list(pool.map(one, cases))
    if args.owner_judged:
        print("| # | input (`hvd-vs-ddp ...`) | the one error line | exit | input run "
              "before | after |")
        print("|---|---|---|---|---|---|")
    else:
        print("| # | input (`hvd-vs-ddp ...`) | exit | stderr | files changed |")
        print("|---|---|---|---|---|")
    good = 0
    for i, (case, code, lines, changed, run_a, run_b) in enumerate(results, start=1):
        ok = (code == 2 and len(lines) == 1 and lines[0].startswith("hvd-vs-ddp: error:")
              and not changed and run_a == run_b)
        good += ok
        shown = lines[0] if len(lines) == 1 else f"{len(lines)} lines: " + " / ".join(lines)
        if args.owner_judged:
            print(f"| {i} | `{_md(case.id)}` | {_md(shown[:300])} | {code} | "
                  f"`{run_a[:12]}` | `{run_b[:12]}`{'' if not changed else ' (FILES CHANGED)'} |")
        else:
            print(f"| {i} | `{_md(case.id)}` | {code} | {_md(shown[:300])} | "
                  f"{'YES' if changed else 'none'} |")
    n = len(results)
    print(f"\n{good} of {n} bad inputs refused with exit 2 and one line "
          f"\"hvd-vs-ddp: error: ...\", with no file written or changed.")
    return 0 if good == n else 1


if __name__ == "__main__":
    sys.exit(main())
