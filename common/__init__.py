"""The bottom layer every other package may use: one error policy and one logger.

Torch-free and dependency-free, so reports/ and results_schema/ can import it too.

    from common.errors import InputError, UnknownName
    from common.log import log
"""
