"""The bottom layer every other package may use: one error policy and one logger.

Torch-free and dependency-free, so the reports and the results format can import it
too.

    from hvd_vs_ddp.common.errors import InputError, UnknownName
    from hvd_vs_ddp.common.log import log
"""
