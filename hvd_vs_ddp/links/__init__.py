"""Emulated hosts over a link of a set rate (docs/links.md).

Two "hosts" on this machine, each a network namespace with its own hostname and
/etc/hosts, joined by a veth pair whose both directions a token-bucket filter shapes
to a chosen rate: the regime where communication, not compute, decides a step. Only
the rate is emulated, not a delay (tc's netem is not available here).

- rates.py: `--link-rate` values (loopback or a rate), the bucket's size, the time a
  transfer takes at a rate (what the projection is held to);
- hosts.py: making, shaping and removing the hosts; whose namespaces a run's start
  sweeps (those whose owning process is dead); the one-line refusal without root;
- sweep.py: the rate reached on the veth at each setting (one TCP transfer each).

Below the CLI (it imports hvd_vs_ddp.common only), so the runner and the suites' ranks
may both use it.

    sudo .venv/bin/python -m hvd_vs_ddp.links.sweep       # the rates reached here
"""
