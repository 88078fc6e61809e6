"""Rank script: several of the mpi4py process group's rank scripts in one launch, one
after the other, each initialising and destroying a process group of its own (as the
suites open and close a backend per test): one mpirun instead of one per script.

    mpirun -np 2 python tests/ranks/mpi_pg_parts.py collectives ddp
    mpirun -np 3 --oversubscribe python tests/ranks/mpi_pg_parts.py collectives:--reverse-ranks ddp

A part is `collectives` (tests/ranks/mpi_pg_collectives.py) or `ddp`
(tests/ranks/mpi_pg_ddp.py), with its own arguments after a colon. Rank 0 prints
`PART <part>: exit <status>` after each (0: every check passed); a part that raises is
printed and counted as exit 2, and the next part still runs. Exits with the highest
status. tests/system/test_mpi_pg.py runs it and judges each part on its own line.
"""
from __future__ import annotations

import sys
import traceback

import mpi_pg_collectives
import mpi_pg_ddp
from mpi4py import MPI

PARTS = {"collectives": mpi_pg_collectives.main, "ddp": mpi_pg_ddp.main}


def main(parts: list[str]) -> int:
    unknown = [p for p in parts if p.split(":", 1)[0] not in PARTS]
    if unknown or not parts:
        print(f"unknown part(s) {unknown}; known: {', '.join(PARTS)}", file=sys.stderr)
        return 2
    worst = 0
    for part in parts:
        name, _, args = part.partition(":")
        sys.argv = [f"{name}.py", *args.split()]
        try:
            status = PARTS[name]()
        except Exception:  # noqa: BLE001 - the part failed; the next one still runs
            traceback.print_exc()
            status = 2
        status = MPI.COMM_WORLD.allreduce(status, op=MPI.MAX)
        if MPI.COMM_WORLD.Get_rank() == 0:
            # one write, on a line of its own: with PYTHONUNBUFFERED, print() writes its
            # text and its newline apart, and mpirun forwarded a part's last line's
            # newline after this one ("8.8 sPART collectives: exit 0")
            sys.stdout.write(f"\nPART {part}: exit {status}\n")
            sys.stdout.flush()
        worst = max(worst, status)
    return worst


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
