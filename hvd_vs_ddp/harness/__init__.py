"""The suites' runtime: what `pytest suites/` needs besides backends and workloads.

- collective_pytest.py: makes pytest safe on N ranks (same tests, merged outcomes,
  per-test time limits, rank 0 writes);
- options.py: the suites' options, declared once (pytest and `hvd-vs-ddp run` use it);
- knobs.py: the knob sets both sides of a comparison get;
- monitor.py: utilisation and memory sampling during timed rounds;
- versions.py: provenance (versions, hardware, knob environment variables);
- rank_started.py: every rank's first line (rank, PID, host), read back by
  hvd_vs_ddp/cli/cell_errors.py; rank_guard.py: runs a rank as its child and reports its
  death first (mpiexec's ranks).

Never imports the CLI package (hvd_vs_ddp/); the CLI imports this.
"""
