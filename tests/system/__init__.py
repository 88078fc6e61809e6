"""System tests: real ranks under torchrun, mpirun, horovodrun, srun; minutes.

    python -m pytest tests/system -q
"""
