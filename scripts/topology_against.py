"""The topology table (tests/unit/topology.py) evaluated with another commit's code.

The table and its launcher variables are this checkout's; `env.detect` and the placement
rules are the commit's (its hvd_vs_ddp/ is unpacked with `git archive` into a temporary
folder and run in a fresh interpreter). A commit without backends/placement.py gets the
rules it had: the device `local_rank % visible GPUs` (base.py / horovod.py), ddp.py's
`gpus_fit` for NCCL backends other than Horovod (which had no GPU check), and no check
for Gloo/MPI ranks on a GPU.

    python scripts/topology_against.py 56a4867      # every row: ok or WRONG, then a count
    python scripts/topology_against.py HEAD
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

EVALUATE = r"""
import sys
sys.path[:0] = [{old!r}, {root!r}]
import hvd_vs_ddp
assert hvd_vs_ddp.__file__.startswith({old!r}), hvd_vs_ddp.__file__
from tests.unit import topology
try:
    import hvd_vs_ddp.backends.placement  # noqa: F401
    rules = topology.current_rules()
except ImportError:
    from hvd_vs_ddp.backends.env import detect

    def device(env, visible, environ, nccl):
        return env.local_rank % len(visible)

    def refuse(env, visible, environ, nccl):
        if not nccl or "HOROVOD_RANK" in environ:
            return None
        vis = environ.get("CUDA_VISIBLE_DEVICES")
        if env.local_size <= len(visible) or (vis is not None and len(visible) >= 1):
            return None
        return f"{{env.local_size}} ranks on this host but {{len(visible)}} GPU(s)"

    rules = (detect, device, refuse, None)
wrong = 0
for row, outcome, ok in topology.table(rules):
    wrong += not ok
    print(f"{{'ok   ' if ok else 'WRONG'}} {{row.id:38s}} {{outcome[:90]}}")
print(f"{{wrong}} of {{len(topology.ROWS)}} rows wrong")
"""


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python scripts/topology_against.py COMMIT", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="topology-") as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", argv[0], "hvd_vs_ddp"],
                                 capture_output=True)
        if archive.returncode != 0:
            print(f"topology_against: {archive.stderr.decode().strip()}", file=sys.stderr)
            return 2
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        code = EVALUATE.format(old=tmp, root=str(ROOT))
        return subprocess.run([sys.executable, "-c", code], cwd=tmp).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
