"""`python -m hvd_vs_ddp ...` is `hvd-vs-ddp ...`."""
import sys

from hvd_vs_ddp.cli.app import main

sys.exit(main())
