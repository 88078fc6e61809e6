"""What every projection prints first about itself, and the error it refuses bad input
with: shared by the cluster projection (hvd_vs_ddp/projection/command.py) and the
projection across a TCP link (hvd_vs_ddp/projection/link_target.py), light to import.

    from hvd_vs_ddp.projection.label import LABEL, ProjectError
"""
from __future__ import annotations

from hvd_vs_ddp.common.errors import InputError

LABEL = "PROJECTION: predicted by a model, not measured"


class ProjectError(InputError):
    """Bad input to `hvd-vs-ddp project`: one line, exit 2, before any work."""
