"""What a projection's bands carry, in `hvd-vs-ddp project`'s words.

The model's error at the measured size (errors.py's split), its growth with the scale
factor fitted by extrapolation (extrapolation.py), the error each projected size's band
carries, and, for a run made on CPUs projected to GPU nodes, the CPU-to-GPU distance
added to every band. Used by hvd_vs_ddp/projection/command.py; to see it:

    hvd-vs-ddp project --compute-ms 100 --model resnet50 --batch-size 64 \
        --devices 1,8,64,512 --devices-per-node 4 --interconnect ib-hdr  # the notes
"""
from __future__ import annotations

from hvd_vs_ddp.projection.model import Inputs, ModelError, error_scale

# A CPU run projected to GPU nodes measured no GPU. Its Horovod/DDP gap comes from
# ranks sharing a few cores (Horovod's background thread among them): on this
# project's CPU runs 0.54-0.82 (README, docs/projection.md) where the published GPU
# head-to-heads are 0.93-1.05, a distance of up to |log 0.54| = 0.62; carried as a
# further error of sd 0.3 in log (95%: x/÷ 1.8) on both libraries and the ratio
CPU_TO_GPU = 0.3
CPU_NOTE = ("from a CPU run to GPU nodes: the run measured no GPU, so the band counts the "
            "model's error from one device (not from the run's sizes) and adds the "
            f"CPU-to-GPU distance (sd {CPU_TO_GPU:.0%} in log: CPU runs' Horovod/DDP ratios "
            "0.54-0.82 against published GPU ones 0.93-1.05); to project GPUs, measure one: "
            "hvd-vs-ddp run --world-sizes 1 on one GPU (or --world-sizes 1,G on one GPU "
            "node), then hvd-vs-ddp project that run")


def error_note(model_error: ModelError | None) -> str:
    """What the bands carry: the model's own error where it is estimated, else not."""
    if model_error is None:
        return ("bands carry the inputs' uncertainty only: the model's error is estimated "
                "on published GPU clusters, not on a run's own links (the CPU self-check "
                "measures it there)")
    from hvd_vs_ddp.projection.extrapolation import growth_line  # scipy: when needed
    return ("bands carry the model's own error, estimated on published results net "
            "of the inputs' spread and of the publications' noise (repeats of one "
            "configuration): at the measured size "
            + ", ".join(f"{k} {model_error.model[k]:.1%}" for k in ("ddp", "horovod", "ratio"))
            + "; a library's band also holds a measurement's noise ("
            + ", ".join(f"{k} {model_error.noise[k]:.1%}" for k in ("ddp", "horovod"))
            + "), the verdict's band is about the true ratio; "
            + growth_line(model_error))


def carried(inputs: Inputs, sizes: list[int]) -> str:
    """The error each size's band carries, in words."""
    me, parts = inputs.model_error, []
    assert me is not None
    for n in sorted(n for n in set(sizes) if n > 1):
        x = error_scale(inputs, n)
        parts.append(f"{n} devices ({x:g}x what was measured): " + ", ".join(
            f"{k} {me.sd(k, k != 'ratio', x):.0%}" for k in ("ddp", "horovod", "ratio")))
    return ("model error carried (sd of log; the 95% band is about x/÷ exp(1.96 sd)): "
            + "; ".join(parts))
