"""`python -m hvd_vs_ddp.cli ...` is `hvd-vs-ddp ...`."""
import sys

from hvd_vs_ddp.cli.app import main

sys.exit(main())
