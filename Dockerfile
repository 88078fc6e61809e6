# syntax=docker/dockerfile:1
# hvd-vs-ddp, the CUDA image: Horovod 0.28.1 (NCCL, Gloo and MPI) next to PyTorch DDP,
# set up by the same scripts CI uses (scripts/setup.sh, which calls
# scripts/build_horovod.sh). Building needs no GPU; running the GPU backends needs one.
#
#   docker build -t hvd-vs-ddp .          # BuildKit; ~15 min the first time
#   docker run --rm --gpus all --ipc=host hvd-vs-ddp hvd-vs-ddp doctor
#   docker run --rm --gpus all --ipc=host hvd-vs-ddp \
#       torchrun --standalone --nproc-per-node 4 -m pytest suites/ --backends ddp-nccl
#   docker run --rm --gpus all --ipc=host hvd-vs-ddp horovodrun -np 4 pytest suites/ --backends horovod
#
# Multi-host (ssh keys mounted at run time, never baked in), Slurm and Kubernetes:
# deploy/README.md.
#
# Why this base: torch 2.14.1 from PyPI is a CUDA 13.0 build, and Horovod's CUDA code
# is compiled with the image's nvcc, so the toolkit is 13.0 too (build_horovod.sh
# warns on a major mismatch). Ubuntu 24.04 rather than 22.04: both ship Open MPI 4
# (`horovodrun --mpi` writes Open MPI 4 mpirun flags and fails on Open MPI 5), and
# 24.04's 4.1.6 is the later bug-fix release of the 4.1 series (22.04 has 4.1.2);
# 24.04 also brings g++ 13 for the C++20 that torch 2.14's headers demand (22.04's
# g++ 11 has gaps in C++20) and cmake 3.28 (>= 3.20 is needed to pass CUDAARCHS).
FROM nvidia/cuda:13.0.2-devel-ubuntu24.04

# Ubuntu 24.04's versions; the globs let security revisions in, nothing else.
ARG OPENMPI_VERSION=4.1.6
ARG PYTHON_VERSION=3.12.3
ARG GCC_VERSION=13.2.0
ARG CMAKE_VERSION=3.28.3
ARG MAKE_VERSION=4.3
ARG OPENSSH_VERSION=9.6p1
# Read by scripts/build_horovod.sh. There is no GPU at build time, so the GPU
# operations must be named; CUDAARCHS: A100, H100/H200, B200, RTX PRO 6000 Blackwell.
ARG HOROVOD_GPU_OPERATIONS=NCCL
ARG CUDAARCHS="80;90;100;120"
ARG HVD_VS_DDP_JOBS=""
# Provenance, e.g. --build-arg REVISION="$(git rev-parse HEAD)" \
#   --build-arg CREATED="$(date -u +%FT%TZ)" --build-arg SOURCE=https://git.example/hvd-vs-ddp
ARG REVISION=""
ARG CREATED=""
ARG SOURCE=""

LABEL org.opencontainers.image.title="hvd-vs-ddp" \
      org.opencontainers.image.description="Horovod vs PyTorch DistributedDataParallel: the same model, data and hyperparameters through every backend, timed and checked" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.documentation="deploy/README.md" \
      org.opencontainers.image.base.name="docker.io/nvidia/cuda:13.0.2-devel-ubuntu24.04" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# What scripts/setup.sh would apt-get itself as root (Open MPI 4, cmake, g++), plus
# Python with venv and headers (Horovod compiles a torch extension) and ssh for
# multi-host launches. openssh-server's install makes host keys: removed, so that no
# private key ships in the image (a user-mode sshd uses a mounted key instead).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      "openmpi-bin=${OPENMPI_VERSION}-*" "libopenmpi-dev=${OPENMPI_VERSION}-*" \
      "python3=${PYTHON_VERSION}-*" "python3-dev=${PYTHON_VERSION}-*" \
      "python3-venv=${PYTHON_VERSION}-*" \
      "g++=4:${GCC_VERSION}-*" "make=${MAKE_VERSION}-*" "cmake=${CMAKE_VERSION}-*" \
      "openssh-client=1:${OPENSSH_VERSION}-*" "openssh-server=1:${OPENSSH_VERSION}-*" \
 && rm -rf /var/lib/apt/lists/* \
 && rm -f /etc/ssh/ssh_host_*_key /etc/ssh/ssh_host_*_key.pub \
 && [[ "$(mpirun --version)" == *"(Open MPI) 4."* ]] \
 && useradd --create-home --uid 1001 --user-group --shell /bin/bash hvd \
 && install -d -o hvd -g hvd /opt/hvd-vs-ddp

WORKDIR /opt/hvd-vs-ddp
COPY --chown=hvd:hvd . .

# Numeric, so that Kubernetes' runAsNonRoot can verify it.
USER 1001:1001
ENV HOME=/home/hvd \
    PATH=/opt/hvd-vs-ddp/.venv/bin:${PATH} \
    PYTHONUNBUFFERED=1

# The virtualenv (.venv, the pins of constraints.txt) and Horovod built against its
# torch, then proof: horovodrun --check-build must list PyTorch, MPI, Gloo and NCCL.
# pip's downloads and the Horovod wheel stay in a BuildKit cache, not in the image, so
# a rebuild after a source change takes minutes, not a quarter of an hour.
RUN --mount=type=cache,target=/home/hvd/.cache,uid=1001,gid=1001 \
    bash scripts/setup.sh \
 && horovodrun --check-build | tee /tmp/check-build.txt \
 && for want in PyTorch MPI Gloo NCCL; do \
      grep -qE "\[X\] ${want}\$" /tmp/check-build.txt \
        || { echo "Horovod lacks ${want}" >&2; exit 1; }; \
    done \
 && rm /tmp/check-build.txt

# A user-mode sshd for multi-host workers listens here (deploy/ssh/sshd_config).
EXPOSE 2222
CMD ["hvd-vs-ddp", "doctor"]
