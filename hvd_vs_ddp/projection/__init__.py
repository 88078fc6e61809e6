"""Projection: predict Horovod vs DDP past the machines a run measured.

`hvd-vs-ddp project RUN_DIR --devices 8,64,512 --devices-per-node 8 --interconnect
ib-hdr` predicts, per library, the step time, samples/s and scaling efficiency of a
cluster the user does not have yet, from what the run measured on one machine:

    compute      per-rank forward+backward time (compute-only cell, or --compute-ms)
    layout       the model's gradients, their sizes and when backward makes each ready
                 (hvd_vs_ddp/projection/layout.py: the model traced on torch's meta device)
    collectives  an alpha-beta cost model (hvd_vs_ddp/projection/collectives.py): ring and tree
                 allreduce, hierarchical intra-/inter-node, with alpha and beta from
                 the interconnect table (hvd_vs_ddp/projection/interconnects.py, each row with its
                 source) or fitted to the run's collectives suite (`measured`)
    scheduling   DDP's buckets overlapping backward; Horovod's cycles, negotiation and
                 fusion buffer (hvd_vs_ddp/projection/schedule.py), with the run's recorded values
    terms        the GPU-side costs beside the allreduces, each named with its source and
                 range (hvd_vs_ddp/projection/terms.py): contention, copies, negotiation
                 over the CPU controller, ready waits, synchronize, the CPU's lead
    with N       stragglers (the slowest of N ranks, hvd_vs_ddp/projection/stragglers.py),
                 the ring's network hops, Horovod's per-cycle wait for the last rank's
                 thread, the input pipeline on the host's cores (projection/host.py)

The headline is the projected ratio Horovod/DDP per size with its band and a verdict in
the report's words (hvd_vs_ddp/projection/verdict.py). Every figure it prints is
labelled a projection and carries a band from its inputs' uncertainty and, on GPU
targets, the model's own error estimated out of sample (hvd_vs_ddp/projection/errors.py).
`python -m hvd_vs_ddp.projection.validation` holds the model against published results,
head to head (data/head_to_head.csv) and one library each (data/published.csv), leave
one source out, and prints every row and the goals; docs/projection.md records the table.
`python -m hvd_vs_ddp.projection.extrapolation` holds it by extrapolation (each study's
one-node rows predict the rest): the model's error grows with the scale factor, and
every band carries the error at its own.
"""

MIN_DRAWS = 40  # a 95% band needs draws in both of its 2.5% tails (1 in 40): fewer, refused
