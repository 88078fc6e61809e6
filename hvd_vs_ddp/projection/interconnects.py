"""The interconnect table: line rates, latencies and achieved fractions, with sources.

A row is one kind of link. `gbit_s` is the line rate per direction: per GPU for an
intra-node link (all of a GPU's NVLinks together, or its PCIe x16 slot), per NIC for an
inter-node link (`--nics-per-node` multiplies it). The line rate comes from the
standard or the vendor's datasheet named in `source`. What a collective achieves of it
(NCCL's bus bandwidth over the line rate: `efficiency`, a low-high range) and the
per-step latency (`latency_us`, low-high) are not in any datasheet: they are typical
ranges, stated as assumptions, and the projection's band covers the whole range.

    python -m hvd_vs_ddp.projection.interconnects     # prints the table
    from hvd_vs_ddp.projection.interconnects import get; get("ib-hdr").bytes_per_s()
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from hvd_vs_ddp.common.errors import InputError, UnknownName

MEASURED = "measured"  # alpha and beta fitted to the run's own collectives suite

# Typical achieved fractions and latencies (assumptions, not datasheet figures; the
# band covers each range). NVLink/PCIe: NCCL bus bandwidth reaches ~70-90% of the
# line rate; RDMA fabrics (IB, RoCE) ~80-95%; TCP over Ethernet ~50-85%.
_NVLINK_EFF, _PCIE_EFF, _RDMA_EFF, _TCP_EFF = (0.70, 0.90), (0.70, 0.85), (0.80, 0.95), \
    (0.50, 0.85)
_NVLINK_LAT, _PCIE_LAT, _IB_LAT, _ROCE_LAT, _TCP_LAT = (2, 6), (3, 10), (4, 12), (6, 20), \
    (25, 80)
# Through a libfabric plug-in (EFA's SRD, Slingshot's CXI): ~60-90% of the line rate;
# EFA's latency is higher than InfiniBand's (~15 µs a message), Omni-Path's through
# sockets more so.
_OFI_EFF, _EFA_LAT, _OPA_LAT = (0.60, 0.90), (10, 30), (10, 60)
# Ethernet speeds (Gb/s) and the IEEE 802.3 amendment that defines each
_ETHERNET = {1: "802.3ab", 10: "802.3ae", 25: "802.3by", 40: "802.3ba", 50: "802.3cd",
             100: "802.3bj/ba", 200: "802.3bs/cd", 400: "802.3bs/cd", 800: "802.3df"}
# Names that name a family, not a link: what to write instead
_IB_RATES = "write the InfiniBand rate: ib-qdr, ib-fdr, ib-edr, ib-hdr, ib-ndr, ib-xdr"
_FAMILIES = {
    "nvswitch": "NVSwitch joins one NVLink generation: write it (nvlink2: DGX-2 / V100, "
                "nvlink3: DGX A100, nvlink4: DGX H100, nvlink5: B200)",
    "nvlink": "write the NVLink generation: nvlink1 (P100) to nvlink5 (B200)",
    "pcie": "write the PCIe generation: pcie3, pcie4 or pcie5",
    "infiniband": _IB_RATES,
    "ib": _IB_RATES,
    "roce": "write RoCE's speed, e.g. roce-100g",
    "ethernet": "write the Ethernet speed, e.g. eth-25g (TCP) or roce-100g (RDMA)",
    "slingshot": "write slingshot-11 (200 Gb/s Cassini NICs) or slingshot-10 (100 Gb/s)",
}


@dataclass(frozen=True)
class Link:
    name: str
    scope: str                      # "intra" (inside a node) or "inter" (between nodes)
    gbit_s: float                   # line rate per direction (per GPU, or per NIC)
    latency_us: tuple[float, float]  # per collective step, low-high (assumed range)
    efficiency: tuple[float, float]  # achieved fraction of the line rate (assumed range)
    source: str                     # where the line rate comes from

    def bytes_per_s(self, efficiency: float | None = None) -> float:
        eff = efficiency if efficiency is not None else sum(self.efficiency) / 2
        return self.gbit_s * 1e9 / 8 * eff

    def latency_s(self, latency_us: float | None = None) -> float:
        lat = latency_us if latency_us is not None else sum(self.latency_us) / 2
        return lat * 1e-6


_NV = "NVIDIA datasheet / architecture whitepaper"
LINKS = {link.name: link for link in (
    # intra-node: per GPU, all of its links, one direction
    Link("nvlink1", "intra", 4 * 20 * 8, _NVLINK_LAT, _NVLINK_EFF,
         f"{_NV}: Tesla P100 (Pascal), 4 NVLink 1.0 links x 20 GB/s per direction"),
    Link("nvlink2", "intra", 6 * 25 * 8, _NVLINK_LAT, _NVLINK_EFF,
         f"{_NV}: Tesla V100 (Volta), 6 NVLink 2.0 links x 25 GB/s per direction "
         "(300 GB/s total)"),
    Link("nvlink3", "intra", 12 * 25 * 8, _NVLINK_LAT, _NVLINK_EFF,
         f"{_NV}: A100 (Ampere), 12 NVLink 3.0 links x 25 GB/s per direction (600 GB/s)"),
    Link("nvlink4", "intra", 18 * 25 * 8, _NVLINK_LAT, _NVLINK_EFF,
         f"{_NV}: H100 SXM (Hopper), 18 NVLink 4.0 links x 25 GB/s per direction "
         "(900 GB/s)"),
    Link("nvlink5", "intra", 18 * 50 * 8, _NVLINK_LAT, _NVLINK_EFF,
         f"{_NV}: B200 (Blackwell), 18 NVLink 5.0 links x 50 GB/s per direction "
         "(1.8 TB/s)"),
    Link("pcie3", "intra", 16 * 8 * 128 / 130, _PCIE_LAT, _PCIE_EFF,
         "PCI-SIG PCI Express 3.0 Base Specification: 8 GT/s per lane, 128b/130b, x16"),
    Link("pcie4", "intra", 16 * 16 * 128 / 130, _PCIE_LAT, _PCIE_EFF,
         "PCI-SIG PCI Express 4.0 Base Specification: 16 GT/s per lane, 128b/130b, x16"),
    Link("pcie5", "intra", 16 * 32 * 128 / 130, _PCIE_LAT, _PCIE_EFF,
         "PCI-SIG PCI Express 5.0 Base Specification: 32 GT/s per lane, 128b/130b, x16"),
    # inter-node: per NIC, one direction
    Link("ib-qdr", "inter", 4 * 10 * 8 / 10, _IB_LAT, _RDMA_EFF,
         "InfiniBand Trade Association roadmap: QDR 4x = 40 Gb/s signalling, 8b/10b: "
         "32 Gb/s of data"),
    Link("ib-fdr", "inter", 4 * 14.0625 * 64 / 66, _IB_LAT, _RDMA_EFF,
         "InfiniBand Trade Association roadmap: FDR 4x = 56 Gb/s signalling, 64b/66b: "
         "54.5 Gb/s of data"),
    Link("ib-edr", "inter", 100, _IB_LAT, _RDMA_EFF,
         "InfiniBand Trade Association roadmap: EDR 4x = 100 Gb/s"),
    Link("ib-hdr100", "inter", 100, _IB_LAT, _RDMA_EFF,
         "InfiniBand Trade Association roadmap: HDR100 = HDR 2x, 100 Gb/s"),
    Link("ib-hdr", "inter", 200, _IB_LAT, _RDMA_EFF,
         "InfiniBand Trade Association roadmap: HDR 4x = 200 Gb/s"),
    Link("ib-ndr200", "inter", 200, _IB_LAT, _RDMA_EFF,
         "InfiniBand Trade Association roadmap: NDR200 = NDR 2x, 200 Gb/s"),
    Link("ib-ndr", "inter", 400, _IB_LAT, _RDMA_EFF,
         "InfiniBand Trade Association roadmap: NDR 4x = 400 Gb/s"),
    Link("ib-xdr", "inter", 800, _IB_LAT, _RDMA_EFF,
         "InfiniBand Trade Association roadmap: XDR 4x = 800 Gb/s"),
    # Fabrics NCCL reaches through a libfabric plug-in (aws-ofi-nccl) rather than
    # InfiniBand verbs: wider ranges, since the plug-in's version matters as much.
    Link("efa-100g", "inter", 100, _EFA_LAT, _OFI_EFF,
         "AWS EC2 accelerated-computing instance specifications: Elastic Fabric Adapter, "
         "100 Gb/s per interface (p3dn.24xlarge 1, p4d.24xlarge 4, p5.48xlarge 32)"),
    Link("slingshot-10", "inter", 100, _ROCE_LAT, _OFI_EFF,
         "HPE Slingshot 10: Slingshot switches with 100 Gb/s ConnectX-5 NICs"),
    Link("slingshot-11", "inter", 200, _IB_LAT, _OFI_EFF,
         "HPE Slingshot 11: 200 Gb/s Cassini NICs (e.g. Perlmutter, Frontier, LUMI-G: "
         "4 per GPU node)"),
    Link("opa-100g", "inter", 100, _OPA_LAT, _TCP_EFF,
         "Intel Omni-Path Architecture 100 series: 100 Gb/s; NCCL has no transport of its "
         "own for it (sockets over IPoIB, or libfabric's PSM2 provider)"),
    *(Link(f"roce-{g}g", "inter", g, _ROCE_LAT, _RDMA_EFF,
           f"IEEE {std} ({g}GbE) with RoCE v2 (IBTA Annex A17)")
      for g, std in _ETHERNET.items() if g >= 25),
    *(Link(f"eth-{g}g", "inter", g, _TCP_LAT, _TCP_EFF, f"IEEE {std} ({g}GbE), TCP sockets")
      for g, std in _ETHERNET.items()),
)}


def names(scope: str | None = None) -> list[str]:
    return [n for n, link in LINKS.items() if scope is None or link.scope == scope]


def canonical(name: str) -> str:
    """A link as people write it, as the table names it: 'HDR InfiniBand' and 'IB-HDR' ->
    ib-hdr, '100GbE' -> eth-100g, '100G RoCE' -> roce-100g, 'NVLink 3' -> nvlink3,
    'PCIe Gen4' -> pcie4, 'EFA' -> efa-100g, 'HPE Slingshot 11' -> slingshot-11,
    'Omni-Path' -> opa-100g; anything else unchanged."""
    n = re.sub(r"[\s_]+", "-", name.strip().lower())
    m = re.fullmatch(r"(?:ib|infiniband)-?(qdr|fdr|edr|hdr(?:-?100)?|ndr(?:-?200)?|xdr)|"
                     r"(qdr|fdr|edr|hdr(?:-?100)?|ndr(?:-?200)?|xdr)(?:-?(?:ib|infiniband))?", n)
    if m:
        return f"ib-{(m.group(1) or m.group(2)).replace('-', '')}"
    m = re.fullmatch(r"(?:(roce)(?:-?v2)?-?)?(\d+)-?g(?:b|bit|igabit)?(?:e|-?ethernet)?"
                     r"(?:-?(roce)(?:-?v2)?)?|(?:eth|ethernet)-?(\d+)-?g(?:b|bit)?e?", n)
    if m:
        speed = m.group(2) or m.group(4)
        return f"{'roce' if m.group(1) or m.group(3) else 'eth'}-{speed}g"
    m = re.fullmatch(r"(nvlink|pcie)-?(?:gen)?-?(\d)(?:\.0)?", n)
    if m:
        return f"{m.group(1)}{m.group(2)}"
    n = re.sub(r"^(?:hpe-|intel-|aws-)", "", n)
    if re.fullmatch(r"efa(?:-?100-?g(?:b|bit)?(?:/s)?)?|elastic-fabric-adapter", n):
        return "efa-100g"
    m = re.fullmatch(r"slingshot-?(10|11)", n)
    if m:
        return f"slingshot-{m.group(1)}"
    if re.fullmatch(r"(?:opa|omni-?path)(?:-?100(?:-?g(?:b|bit)?)?)?", n):
        return "opa-100g"
    return name


def get(name: str, scope: str | None = None) -> Link:
    """The row named `name` (or its canonical(name)); an unknown name (or one of the wrong
    scope) is one clear error listing the known ones."""
    link = LINKS.get(name) or LINKS.get(canonical(name))
    family = re.sub(r"[\s_-]+", "", name.strip().lower())
    if link is None and family in _FAMILIES:
        raise InputError(f"{name!r} names a family of links, not one: {_FAMILIES[family]}")
    if link is None or (scope is not None and link.scope != scope):
        what = {"intra": "intra-node link", "inter": "interconnect"}.get(scope or "",
                                                                           "link")
        raise UnknownName(what, name, names(scope) + ([MEASURED] if scope == "inter" else []))
    return link


def table_rows() -> list[dict]:
    return [{"name": link.name, "scope": link.scope, "gbit_s": round(link.gbit_s, 1),
             "latency_us": f"{link.latency_us[0]:g}-{link.latency_us[1]:g}",
             "efficiency": f"{link.efficiency[0]:.2f}-{link.efficiency[1]:.2f}",
             "source": link.source} for link in LINKS.values()]


def main() -> int:
    print("| link | scope | Gb/s per direction | latency µs | achieved | source |")
    print("| --- | --- | ---: | --- | --- | --- |")
    for r in table_rows():
        print(f"| {r['name']} | {r['scope']} | {r['gbit_s']:g} | {r['latency_us']} | "
              f"{r['efficiency']} | {r['source']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
