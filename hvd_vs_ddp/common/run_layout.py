"""The run folder's names, in one place: the files and folders `hvd-vs-ddp run` makes.

    RUN_DIR/manifest.json          the run's manifest (results_schema)
    RUN_DIR/cells/<stem>.json      a cell's results; beside it its timeline, traces,
                                   autotune log and recovery trial folders (<stem>.*)
    RUN_DIR/logs/<stem>.log        a cell's combined output
    RUN_DIR/inductor-cache/<cell>/ a compiling cell's cache (cold, then warm)
    RUN_DIR/damaged/<stamp>/...    files a resume moved aside (cli/resume_check.py)
    RUN_DIR/projection.json        `hvd-vs-ddp project RUN_DIR`'s projection of the run

hvd_vs_ddp/common/run_folder.py (RunFolder, the one way to reach these paths) and the
output gate's rule of what a run owns (hvd_vs_ddp/common/outputs.py, which RunFolder
calls) read these names; everything else asks a RunFolder for a path (a damage report
that names the manifest relative to the run takes MANIFEST from here).
"""
from __future__ import annotations

MANIFEST = "manifest.json"
CELLS = "cells"
LOGS = "logs"
COMPILE_CACHE = "inductor-cache"
DAMAGED = "damaged"
PROJECTION = "projection.json"
