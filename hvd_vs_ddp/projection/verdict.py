"""The projection's headline: Horovod / DDP at every size, its band and a verdict.

For each device count, the best Horovod and the best DDP (highest median projected
samples/s, as the report's answers take the best measured of each) are compared draw
by draw: both were drawn from the same seed (hvd_vs_ddp/projection/model.py), so the
ratio's band carries what differs between them, and the model's own error for the
ratio (out-of-sample residuals of published head-to-head results net of the inputs'
spread and of the publications' own noise, hvd_vs_ddp/projection/errors.py) is drawn
on top. The band is about the true ratio: the noise of one measured figure is not in
it. The verdict uses the report's words
and margin (hvd_vs_ddp/run_model/margin.py): "faster" beyond the margin, "equivalent" inside
it, "inconclusive" when the band straddles an edge, and then the line says what would
settle it. A projection from a run whose timings kept other work's load (cells named in
`inputs.disturbed`, hvd_vs_ddp/run_model/disturbed.py) is inconclusive at every size
above one: that load moved the calibration by an amount no band measures.

Where the input pipeline was not measured (a run that fed tensors from memory,
or --compute-ms without --loader-cpu-ms or --input-on-device), a verdict above one
device is not firm: the line gives what the model says with the input in memory, that
decoding on the host can decide it (DataLoader workers compete for the node's cores with
each library's own threads: Horovod's background thread and GPU finalizer), and how to
measure it on one node. `verdict_in_memory` keeps the verdict it would have been.

The model's error grows with the scale factor (devices projected over devices
measured, hvd_vs_ddp/projection/extrapolation.py). Where the band with that growth
straddles the margin but the error at the measured size alone would give a firm verdict,
the line says plainly that no firm verdict is possible at that scale factor, what the
narrower band would have said, and what would settle it; `verdict_without_growth` and
`ratio_without_growth` keep them.

    rows = compare(projected, inputs, margin=0.05, from_run=False)
    rows[0]["text"]  # "DDP is 9% faster than Horovod (projected ratio 0.917 [0.87-0.96])"
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from hvd_vs_ddp.backends.catalog import DDP, HOROVOD_LIB
from hvd_vs_ddp.projection.model import error_scale
from hvd_vs_ddp.run_model.margin import DEFAULT_MARGIN, EQUIVALENT, FASTER, INCONCLUSIVE, classify

LEVEL = 95


def _best(projected: list, kind: str, n: int):
    mine = [p for p in projected if p.devices == n and p.kind == kind]
    return max(mine, key=lambda p: p.samples_per_s.median) if mine else None


def settle(n: int, per_node: int, from_run: bool, calibrated: bool) -> str:
    """What measurement would settle an inconclusive projected verdict."""
    if n <= per_node:
        return (f"a run of both libraries on one node of the target machines at {n} "
                "devices measures it directly (hvd-vs-ddp run)")
    if not (from_run and calibrated):
        return (f"a run of both libraries on one node of the target machines ({per_node} "
                "devices: hvd-vs-ddp run), then hvd-vs-ddp project RUN_DIR calibrates each "
                "library's terms on it (docs/projection.md, 'Measure one node, project "
                "many')")
    return ("a run on two nodes of the target machines (the smallest size that crosses "
            "the network) narrows the model's error")


def _band(ratio: np.ndarray, med: float, me, scale: float, seed: int,
          n: int) -> tuple[float, float]:
    """The ratio's 95% band: the inputs' draws times the model's error for the ratio
    (`me`, grown to `scale`; none: the draws alone), about the draws' median."""
    if me is not None:
        err = me.draws("ratio", np.random.default_rng([seed, n, 11]), ratio.size,
                       measurement=False, scale=scale)
        ratio = ratio * np.exp(err)
    lo, hi = (float(x) for x in np.percentile(ratio, [(100 - LEVEL) / 2, (100 + LEVEL) / 2]))
    return min(lo, med), max(hi, med)


def compare(projected: list, inputs, margin: float = DEFAULT_MARGIN, from_run: bool = False,
            calibrated: bool = False, seed: int = 0) -> list[dict]:
    out = []
    for n in sorted({p.devices for p in projected}):
        h, d = _best(projected, "horovod", n), _best(projected, "ddp", n)
        if h is None or d is None or not h.draws or not d.draws:
            continue
        ratio = np.asarray(h.draws) / np.asarray(d.draws)  # the inputs' draws alone
        med = float(np.median(ratio))
        inputs_lo, inputs_hi = np.percentile(ratio, [(100 - LEVEL) / 2, (100 + LEVEL) / 2])
        scale = error_scale(inputs, n) if inputs.model_error is not None and n > 1 \
            else 1.0
        lo, hi = _band(ratio, med, inputs.model_error if n > 1 else None, scale, seed, n)
        v = classify(lo, hi, margin) if n > 1 else EQUIVALENT
        # the verdict the band would give without the error's growth with the
        # scale factor (the model's error at the measured size only)
        flat = (_band(ratio, med, replace(inputs.model_error, growth={}), scale, seed, n)
                if n > 1 and inputs.model_error is not None and inputs.model_error.growth
                else (lo, hi))
        v_flat = classify(*flat, margin) if n > 1 else EQUIVALENT
        held = list(inputs.disturbed) if n > 1 else []
        if held:  # timings that carry other work's load: no band holds what it did
            v = INCONCLUSIVE
        in_memory = v
        unmeasured = (n > 1 and not held and not getattr(inputs, "pipeline_measured", True)
                      and v in (FASTER, EQUIVALENT))
        if unmeasured:  # a verdict that rests on tensors in memory is not firm
            v = INCONCLUSIVE
        faster = (HOROVOD_LIB if med > 1 else DDP) if v == FASTER else None
        band = f"projected ratio {med:.3f} [{lo:.3f}-{hi:.3f}]"
        if n == 1:
            text = f"nothing is communicated; both run the same compute ({band})"
        elif v == FASTER:
            fast, slow = (h.library, d.library) if faster == HOROVOD_LIB else \
                (d.library, h.library)
            text = (f"{fast} is {(max(med, 1 / med) - 1) * 100:.0f}% faster than {slow} "
                    f"({band})")
        elif v == EQUIVALENT:
            text = f"{h.library} and {d.library} are equivalent within ±{margin:.0%} ({band})"
        elif unmeasured:
            said = (f"{'ddp' if med < 1 else 'horovod'} "
                    f"{(max(med, 1 / med) - 1) * 100:.0f}% faster" if in_memory == FASTER
                    else f"equivalent within ±{margin:.0%}")
            text = (f"{h.library} vs {d.library}: {said} with the input in memory ({band}), "
                    "not a firm verdict: the input pipeline was not measured, and decoding "
                    "on the host can decide it (DataLoader workers compete for the node's "
                    "cores with each library's own threads, Horovod's background thread and "
                    "GPU finalizer among them); measure it on one node: hvd-vs-ddp run "
                    "--input jpeg --loader-workers W --world-sizes 1,G, then project that "
                    "run (or give --loader-cpu-ms, or --input-on-device where nothing "
                    "loads on the host)")
        elif held:
            text = (f"{h.library} vs {d.library}: inconclusive at ±{margin:.0%} ({band}): "
                    f"{len(held)} cell(s) of the run it is projected from were timed while "
                    f"other work used the host's cores ({', '.join(held[:3])}"
                    f"{', ...' if len(held) > 3 else ''}); what would settle it: the same "
                    "run again on a quiet host")
        elif getattr(inputs, "run_on_cpu", False) and getattr(inputs, "gpu", False):
            text = (f"{h.library} vs {d.library}: inconclusive at ±{margin:.0%} ({band}): "
                    "projected from a run on CPUs, which measured no GPU (the band carries "
                    "the CPU-to-GPU distance); what would settle it: hvd-vs-ddp run "
                    f"--world-sizes 1,{min(n, inputs.per_node)} on one GPU node of the "
                    "target, then hvd-vs-ddp project that run")
        elif v_flat in (FASTER, EQUIVALENT):  # firm but for the growth
            word = (f"{'ddp' if med < 1 else 'horovod'} faster" if v_flat == FASTER
                    else f"equivalent within ±{margin:.0%}")
            text = (f"{h.library} vs {d.library}: no firm verdict is possible at {scale:g}x "
                    f"what was measured ({band}): the model's error grown by extrapolation "
                    f"(sd {inputs.model_error.sd('ratio', False, scale):.1%} on the ratio) "
                    f"straddles the ±{margin:.0%} margin, where the error at the measured "
                    f"size alone ([{flat[0]:.3f}-{flat[1]:.3f}]) would say {word}; what "
                    f"would settle it: {settle(n, inputs.per_node, from_run, calibrated)}")
        else:
            text = (f"{h.library} vs {d.library}: inconclusive at ±{margin:.0%} ({band}); "
                    f"what would settle it: {settle(n, inputs.per_node, from_run, calibrated)}")
        out.append({"devices": n, "nodes": h.nodes, "horovod": h.library, "ddp": d.library,
                    "ratio": [med, lo, hi],
                    "ratio_inputs_only": [med, float(inputs_lo), float(inputs_hi)],
                    "margin": margin, "verdict": v, "faster": faster, "text": text,
                    "verdict_without_growth": v_flat, "ratio_without_growth":
                        [med, float(flat[0]), float(flat[1])], "error_scale": scale,
                    "disturbed_cells": held, "verdict_in_memory": in_memory,
                    "input_pipeline": ("not measured" if unmeasured or (
                        n > 1 and not getattr(inputs, "pipeline_measured", True))
                        else "measured" if getattr(inputs, "host", None) is not None
                        else "not on the host")})
    return out
