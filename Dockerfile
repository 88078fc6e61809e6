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
#
# One build argument, BASE_IMAGE, picks another base; everything that differs follows
# from the base itself: the apt pins from its /etc/os-release (the table below), the
# CUDA toolkit from the base when it has one (/usr/local/cuda/bin/nvcc), else from
# PyPI's CUDA 13.0 wheels. scripts/build_image.sh builds this file FROM a Debian
# bookworm base made from Debian's archive (no CUDA base can be fetched there) and runs
# the checks inside; README "The image" says which bases are built and tested where.
ARG BASE_IMAGE=nvidia/cuda:13.0.2-devel-ubuntu24.04
FROM ${BASE_IMAGE}

ARG BASE_IMAGE
# Read by scripts/build_horovod.sh. There is no GPU at build time, so the GPU
# operations must be named; CUDAARCHS: A100, H100/H200, B200, RTX PRO 6000 Blackwell.
ARG HOROVOD_GPU_OPERATIONS=NCCL
ARG CUDAARCHS="80;90;100;120"
ARG HVD_VS_DDP_JOBS=""
SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# What scripts/setup.sh would apt-get itself as root (Open MPI 4, cmake, g++), plus
# Python with venv and headers (Horovod compiles a torch extension) and ssh for
# multi-host launches, pinned per distribution (the globs let security revisions in,
# nothing else):
#              Open MPI  Python  g++     cmake   make  OpenSSH
#   noble      4.1.6     3.12.3  13.2.0  3.28.3  4.3   9.6p1   (Ubuntu 24.04, the default)
#   bookworm   4.1.4     3.11.2  12.2.0  3.25.1  4.3   9.2p1   (Debian 12, built here)
# openssh-server's install makes host keys: removed, so that no private key ships in
# the image (a user-mode sshd uses a mounted key instead).
RUN . /etc/os-release \
 && case "${VERSION_CODENAME:-}" in \
      noble)    ompi=4.1.6 py=3.12.3 gcc=13.2.0 cmake=3.28.3 make=4.3 ssh=9.6p1 ;; \
      bookworm) ompi=4.1.4 py=3.11.2 gcc=12.2.0 cmake=3.25.1 make=4.3 ssh=9.2p1 ;; \
      *) echo "image: no apt pins for base '${BASE_IMAGE}' (${PRETTY_NAME:-unknown}); known: noble, bookworm (Dockerfile)" >&2; exit 1 ;; \
    esac \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      "openmpi-bin=${ompi}-*" "libopenmpi-dev=${ompi}-*" \
      "python3=${py}-*" "python3-dev=${py}-*" "python3-venv=${py}-*" \
      "g++=4:${gcc}-*" "make=${make}-*" "cmake=${cmake}-*" \
      "openssh-client=1:${ssh}-*" "openssh-server=1:${ssh}-*" \
 && rm -rf /var/lib/apt/lists/* \
 && rm -f /etc/ssh/ssh_host_*_key /etc/ssh/ssh_host_*_key.pub \
 && [[ "$(mpirun --version)" == *"(Open MPI) 4."* ]] \
 && useradd --create-home --uid 1001 --user-group --shell /bin/bash hvd \
 && install -d -o hvd -g hvd /opt/hvd-vs-ddp

# The CUDA toolkit Horovod's NCCL operations compile against: the base's own
# (nvidia/cuda:*-devel has /usr/local/cuda) or, on a base without one, the CUDA 13.0
# toolkit assembled from PyPI's wheels into /usr/local/cuda-13.0 (nvcc, its front and
# back ends, the runtime's headers and libraries, CCCL): the same versions as torch's
# own CUDA runtime wheel (13.0.96). The wheels' download stays in a build cache.
# Behind a TLS-inspecting proxy, give its CA bundle as the build secret "ca" (`docker
# build --secret id=ca,src=/etc/ssl/certs/ca-certificates.crt .`): pip and uv trust it
# during the build, and nothing of it stays in the image. Without it, nothing changes.
RUN --mount=type=cache,target=/root/.cache/pip \
    --mount=type=secret,id=ca,target=/run/secrets/ca,mode=0444,required=false \
    if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca SSL_CERT_FILE=/run/secrets/ca; fi \
 && if [[ -x /usr/local/cuda/bin/nvcc ]]; then \
      echo "image: CUDA toolkit from the base: $(/usr/local/cuda/bin/nvcc --version | tail -n 2 | head -n 1)"; \
    else \
      python3 -m venv /tmp/cuda-pip \
      && /tmp/cuda-pip/bin/pip install --no-deps --target /tmp/cuda-wheels \
           nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88 \
           nvidia-cuda-cccl==13.0.85 nvidia-cuda-runtime==13.0.96 \
           nvidia-cuda-culibos==13.0.85 nvidia-cuda-cuxxfilt==13.0.85 \
           nvidia-cuda-profiler-api==13.0.85 nvidia-cuda-cupti==13.0.85 nvidia-nvtx==13.0.85 \
      && mv /tmp/cuda-wheels/nvidia/cu13 /usr/local/cuda-13.0 \
      && rm -rf /tmp/cuda-pip /tmp/cuda-wheels \
      && ln -s lib /usr/local/cuda-13.0/lib64 \
      && ln -sf libcudart.so.13 /usr/local/cuda-13.0/lib/libcudart.so \
      && mkdir -p /usr/local/cuda-13.0/targets/x86_64-linux \
      && ln -s ../../include /usr/local/cuda-13.0/targets/x86_64-linux/include \
      && ln -s ../../lib /usr/local/cuda-13.0/targets/x86_64-linux/lib \
      && ln -s cuda-13.0 /usr/local/cuda \
      && echo "image: CUDA toolkit from PyPI's wheels: $(/usr/local/cuda/bin/nvcc --version | tail -n 2 | head -n 1)"; \
    fi

WORKDIR /opt/hvd-vs-ddp
# A user-mode sshd for multi-host workers listens here (deploy/ssh/sshd_config).
EXPOSE 2222
CMD ["hvd-vs-ddp", "doctor"]
# Numeric, so that Kubernetes' runAsNonRoot can verify it.
USER 1001:1001
# The architectures Horovod is built for stay in the environment, so that
# scripts/setup.sh inside the image (tox runs it) finds the installed build its own
# instead of compiling another (its GPU operations come out NCCL by themselves there).
ENV HOME=/home/hvd \
    PATH=/opt/hvd-vs-ddp/.venv/bin:${PATH} \
    PYTHONUNBUFFERED=1 \
    CUDAARCHS=${CUDAARCHS}

# The source last: everything above is reused when only the source changed.
COPY --chown=hvd:hvd . .

# The virtualenv (.venv, the pins of constraints.txt) and Horovod built against its
# torch, then proof: horovodrun --check-build must list PyTorch, MPI, Gloo and NCCL.
# pip's and uv's downloads and the Horovod wheel stay in a build cache, not in the
# image, so a rebuild after a source change reuses them (scripts/build_image.sh
# measures it).
RUN --mount=type=cache,target=/home/hvd/.cache,uid=1001,gid=1001 \
    --mount=type=secret,id=ca,target=/run/secrets/ca,mode=0444,required=false \
    if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca SSL_CERT_FILE=/run/secrets/ca; fi \
 && bash scripts/setup.sh \
 && horovodrun --check-build | tee /tmp/check-build.txt \
 && for want in PyTorch MPI Gloo NCCL; do \
      grep -qE "\[X\] ${want}\$" /tmp/check-build.txt \
        || { echo "Horovod lacks ${want}" >&2; exit 1; }; \
    done \
 && rm /tmp/check-build.txt

# Provenance, last: an ARG's new value misses the cache of every RUN after it, and these
# change with every build. E.g. --build-arg REVISION="$(git rev-parse HEAD)" \
#   --build-arg CREATED="$(date -u +%FT%TZ)" --build-arg SOURCE=https://git.example/hvd-vs-ddp
ARG REVISION=""
ARG CREATED=""
ARG SOURCE=""

LABEL org.opencontainers.image.title="hvd-vs-ddp" \
      org.opencontainers.image.description="Horovod vs PyTorch DistributedDataParallel: the same model, data and hyperparameters through every backend, timed and checked" \
      org.opencontainers.image.version="0.1.0" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.documentation="deploy/README.md" \
      org.opencontainers.image.base.name="${BASE_IMAGE}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}"
