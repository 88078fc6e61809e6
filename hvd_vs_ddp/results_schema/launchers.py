"""The launcher vocabulary of the results format, and how old names map onto it.

Since format version 2 a launcher is named the same way everywhere (manifest cells,
machine_info, every benchmark): one of LAUNCHERS. Version 1 said "horovodrun" for
both Horovod controllers and, in synthetic files, "local" for one process;
`resolve_legacy` turns such a name into a current one from the evidence given, in
this order: the benchmark's backend_meta.controller, the manifest cell's launcher,
the HOROVOD_CONTROLLER recorded in machine_info's env, Gloo rendezvous variables.
Where nothing tells, "horovodrun" is kept and a note says so.

    from hvd_vs_ddp.results_schema.launchers import LAUNCHERS, resolve_legacy
    resolve_legacy("horovodrun", controller="mpi")     # ("horovodrun-mpi", None)
"""
from __future__ import annotations

from typing import Any, Mapping

# The format owns its vocabulary: a results file may name these launchers and no others,
# whatever today's launcher table holds. hvd_vs_ddp/backends/launchers.py has one row per
# name (tests/unit/test_env.py checks the two agree); a new launcher is added here first.
LAUNCHERS = ("single", "torchrun", "spawn", "mpirun", "mpiexec", "srun", "horovodrun-gloo",
             "horovodrun-mpi")
LEGACY_HOROVODRUN = "horovodrun"
CONTROLLERS = ("gloo", "mpi")
_GLOO_EVIDENCE = ("HOROVOD_GLOO_RENDEZVOUS_ADDR", "HOROVOD_GLOO_RENDEZVOUS_PORT",
                  "HOROVOD_GLOO_IFACE")


def controller_from_env(env: Mapping[str, Any] | None) -> str | None:
    """'gloo' / 'mpi' from recorded HOROVOD_* variables, or None when they do not tell."""
    env = env or {}
    hint = env.get("HOROVOD_CONTROLLER")
    if isinstance(hint, str) and hint.lower() in CONTROLLERS:
        return hint.lower()
    if any(env.get(k) for k in _GLOO_EVIDENCE):
        return "gloo"
    return None


def resolve_legacy(launcher: Any, controller: Any = None, cell_launcher: Any = None,
                   env: Mapping[str, Any] | None = None) -> tuple[Any, str | None]:
    """(current name, note or None) for a version-1 launcher name."""
    if launcher == "local":
        return "single", None
    if launcher != LEGACY_HOROVODRUN:
        return launcher, None
    if controller in CONTROLLERS:
        return f"horovodrun-{controller}", None
    if isinstance(cell_launcher, str) and cell_launcher in ("horovodrun-gloo", "horovodrun-mpi"):
        return cell_launcher, None
    found = controller_from_env(env)
    if found:
        return f"horovodrun-{found}", None
    return launcher, ("launcher 'horovodrun' kept: nothing in the file tells the Gloo "
                      "controller from the MPI one")
