"""An alpha-beta cost model of allreduce: ring, tree and hierarchical, one node or many.

alpha is the latency of one step of a collective (seconds), beta the achieved
bandwidth (bytes/s). For p devices and an n-byte allreduce:

    ring          (2(p-1) - 2(nodes-1)) alpha_intra + 2(nodes-1) alpha_inter
                  + 2(p-1)/p * n / beta
                  (NCCL's tuner, src/graph/tuning.cc: of a ring allreduce's 2(p-1) steps,
                  2(nodes-1) cross the network and pay its latency, the rest the
                  intra-node link's)
    tree          2 (log2(nodes) alpha_inter + (local-1) alpha_intra) + 2 n / beta
                  (NCCL's double binary tree between nodes, a chain inside each)
    hierarchical  reduce-scatter and allgather inside the node (ring of `local`),
                  an allreduce of the node's share between nodes (ring of `nodes`)
                  (Horovod's HOROVOD_HIERARCHICAL_ALLREDUCE)

Between nodes, all of a node's traffic crosses its NICs: the ring's bandwidth is the
smaller of a device's intra-node link and the node's NICs together (`Fabric.inter_bw`
is per node). `auto` takes the faster of ring and tree, as NCCL's tuner does.
A fabric `fitted` to a run's collectives suite (`fit_alpha_beta`) is a flat ring
whose alpha and beta came from the measurements themselves.

    fab = Fabric(devices=64, per_node=8, intra=Cost(4e-6, 200e9), inter=Cost(8e-6, 45e9))
    fab.allreduce(100 * 2**20)      # seconds
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

ALGORITHMS = ("auto", "ring", "tree", "hierarchical")


@dataclass(frozen=True)
class Cost:
    alpha: float  # seconds per step
    beta: float   # achieved bytes per second


@dataclass(frozen=True)
class Fabric:
    devices: int
    per_node: int
    intra: Cost
    inter: Cost | None = None  # per node (all NICs); None: one node only
    algorithm: str = "auto"

    def __post_init__(self) -> None:
        if self.devices < 1 or self.per_node < 1:
            raise ValueError("devices and devices per node must be >= 1")
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm {self.algorithm!r}: one of {', '.join(ALGORITHMS)}")
        if self.nodes > 1 and self.inter is None:
            raise ValueError(f"{self.devices} devices at {self.per_node} per node span "
                             f"{self.nodes} nodes: an inter-node link is needed")

    @property
    def nodes(self) -> int:
        return math.ceil(self.devices / self.per_node)

    @property
    def local(self) -> int:
        return min(self.devices, self.per_node)

    def at(self, devices: int) -> "Fabric":
        return replace(self, devices=devices)

    def _flat(self) -> Cost:
        """The ring's bottleneck: the slower link's bandwidth, the larger latency."""
        if self.nodes == 1:
            return self.intra
        assert self.inter is not None
        return Cost(max(self.intra.alpha, self.inter.alpha),
                    min(self.intra.beta, self.inter.beta))

    def ring(self, n: float) -> float:
        p = self.devices
        if p <= 1 or n <= 0:
            return 0.0
        c = self._flat()
        steps = 2 * (p - 1)
        if self.nodes > 1 and self.inter is not None:  # hops split by link
            inter_steps = 2 * (self.nodes - 1)
            lat = (steps - inter_steps) * self.intra.alpha + inter_steps * self.inter.alpha
        else:
            lat = steps * c.alpha
        return lat + 2 * (p - 1) / p * n / c.beta

    def tree(self, n: float) -> float:
        if self.devices <= 1 or n <= 0:
            return 0.0
        c = self._flat()
        inter_alpha = self.inter.alpha if self.inter is not None else 0.0
        depth = math.log2(self.nodes) * inter_alpha + (self.local - 1) * self.intra.alpha
        return 2 * depth + 2 * n / c.beta

    def hierarchical(self, n: float) -> float:
        if self.nodes == 1:
            return self.ring(n)
        assert self.inter is not None
        g, m = self.local, self.nodes
        inside = (g - 1) * self.intra.alpha + (g - 1) / g * n / self.intra.beta
        between = 2 * (m - 1) * self.inter.alpha + 2 * (m - 1) / m * n / self.inter.beta
        return 2 * inside + between

    def allreduce(self, n: float) -> float:
        if self.algorithm == "ring":
            return self.ring(n)
        if self.algorithm == "tree":
            return self.tree(n)
        if self.algorithm == "hierarchical":
            return self.hierarchical(n)
        return min(self.ring(n), self.tree(n))

    def small_message_latency(self) -> float:
        """A few-byte allreduce among all devices (Horovod's negotiation round)."""
        if self.devices <= 1:
            return 0.0
        c = self._flat()
        return 2 * math.ceil(math.log2(self.devices)) * c.alpha


def fit_alpha_beta(points: list[tuple[int, float, float]]) -> Cost:
    """alpha and beta of a flat ring from (world size, bytes, seconds) of measured
    allreduces: least squares of t = alpha * 2(p-1) + (1/beta) * 2(p-1)/p * n, both
    terms kept >= 0 (for two unknowns, clamping one at 0 and refitting the other is
    the nonnegative least-squares solution)."""
    rows = [(2 * (p - 1), 2 * (p - 1) / p * n, t) for p, n, t in points if p > 1]
    if len(rows) < 2:
        raise ValueError("need at least two measured allreduce sizes at 2 or more ranks")
    a = np.array([[r[0], r[1]] for r in rows], dtype=float)
    y = np.array([r[2] for r in rows], dtype=float)
    (alpha, inv_beta), *_ = np.linalg.lstsq(a, y, rcond=None)
    if inv_beta <= 0:  # these sizes do not resolve a bandwidth term: latency only
        inv_beta = 0.0
        alpha = float(np.sum(a[:, 0] * y) / np.sum(a[:, 0] ** 2))
    if alpha < 0:  # no resolvable latency: bandwidth only
        alpha = 0.0
        inv_beta = float(np.sum(a[:, 1] * y) / np.sum(a[:, 1] ** 2))
    return Cost(float(alpha), float(1.0 / max(inv_beta, 1e-15)))
