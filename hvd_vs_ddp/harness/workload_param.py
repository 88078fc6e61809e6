"""`--workload-param NAME:KEY=VALUE`: one workload parameter, parsed and checked.

A workload's parameters are declared by the workload itself
(hvd_vs_ddp/workloads/params.py); `workload_param` splits one assignment, resolves the
workload (a name or a spec, hvd_vs_ddp/workloads/external.py) and parses the value by its
declaration; `canonical_param` gives the form every rank reads. The suites' options
(hvd_vs_ddp/harness/options.py) check each `--workload-param` with these.

    from hvd_vs_ddp.harness.workload_param import workload_param
    workload_param("resnet50:image_size=224")     # ('resnet50', 'image_size', 224)
"""
from __future__ import annotations

from hvd_vs_ddp.common.errors import InputError


def workload_param(spec: str) -> tuple[str, str, object]:
    """'resnet50:image_size=224' -> ('resnet50', 'image_size', 224), the value parsed and
    checked by the workload's own declaration (hvd_vs_ddp/workloads/params.py); NAME may
    be a spec: 'torchvision:vit_b_16:image_size=32', 'path/to/b.py:make:hidden=8' (its
    canonical form is returned)."""
    left, eq, raw = spec.partition("=")
    name, colon, key = left.rpartition(":")
    if not (eq and colon and name.strip() and key.strip()):
        raise InputError(f"--workload-param {spec!r}: expected NAME:KEY=VALUE, e.g. "
                         "resnet50:image_size=224")
    from hvd_vs_ddp.workloads import registry as workloads

    source = workloads.resolve(name)  # one line for an unknown or broken workload
    known = source.params
    if key not in known:
        raise InputError(f"--workload-param {spec!r}: workload {source.spec!r} has no "
                         f"parameter {key!r}; it takes {', '.join(known)}")
    try:
        value = known[key].parse(raw)
    except ValueError as exc:
        raise InputError(f"--workload-param {spec!r}: {exc}") from None
    return source.spec, key, value


def canonical_param(spec: str) -> str:
    """The form the ranks get: the workload's canonical spec and the parsed value (a
    directory made absolute), so every process reads the same assignment."""
    name, key, value = workload_param(spec)
    return f"{name}:{key}={value}"
