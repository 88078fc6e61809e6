#!/usr/bin/env bash
# build_image.sh: build the project's own Dockerfile here, with no Docker daemon, and run
# the checks inside the image as its non-root user.
#
#   bash scripts/build_image.sh                 # build (cached), scan, check inside
#   bash scripts/build_image.sh --from-nothing  # first remove the base, the image, its
#                                               # layers and the build caches
#   bash scripts/build_image.sh --build-only    # build and scan, no checks inside
#   bash scripts/build_image.sh --no-build      # scan and check the image already built
#   bash scripts/build_image.sh --clean         # remove everything this script made
#
# Steps (each prints its name and time; a failing step names itself, exit 1):
#   tools    buildah and debootstrap from Debian's archive when missing (as root)
#   base     a Debian bookworm base image from Debian's archive (debootstrap
#            --variant=minbase), committed as $HVD_VS_DDP_IMAGE_BASE, when missing
#   build    `buildah bud` of ./Dockerfile with --build-arg BASE_IMAGE=<that base>: the one
#            argument that differs from a user's `docker build` (README "The image");
#            layers cached, pip/uv and Horovod wheel caches in build-cache mounts
#   secrets  every layer of the image exported and scanned for private keys and tokens
#            (scripts/image_secrets.py)
#   inside   as the image's user (uid 1001), a host folder mounted at /out:
#            hvd-vs-ddp doctor (+ Horovod's NCCL, MPI, Gloo ops, torch's CUDA build),
#            horovodrun -np 2 and torchrun --nproc-per-node 2 over pytest suites/ (tiny
#            sizes), tox -e ddp, hvd-vs-ddp run (the quick preset's 8 cells: one
#            repetition, gpt only, tiny sizes) and its report, written to the host folder
#
# Knobs (environment):
#   HVD_VS_DDP_IMAGE       the image's name (default localhost/hvd-vs-ddp:bookworm)
#   HVD_VS_DDP_IMAGE_BASE  the base's name (default localhost/debian-minbase:bookworm)
#   HVD_VS_DDP_IMAGE_OUT   the host folder mounted at /out (default ./image-out)
#   DEBIAN_MIRROR          debootstrap's mirror (default http://deb.debian.org/debian)
# Storage: containers-storage with the vfs driver (no overlay needed; every layer is a
# full copy: the image takes ~2.5x its size on disk while cached layers are kept).
# The steps are functions run through step(); the in-image commands are single-quoted
# on purpose (they expand inside the image):
# shellcheck disable=SC2317,SC2016
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export STORAGE_DRIVER=vfs BUILDAH_ISOLATION=chroot
IMAGE=${HVD_VS_DDP_IMAGE:-localhost/hvd-vs-ddp:bookworm}
BASE=${HVD_VS_DDP_IMAGE_BASE:-localhost/debian-minbase:bookworm}
OUT=${HVD_VS_DDP_IMAGE_OUT:-$ROOT/image-out}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# buildah's RUN --mount=type=cache folders (buildah 1.28: buildah-cache under TMPDIR)
CACHE_DIR="${TMPDIR:-/var/tmp}/buildah-cache"
TINY=(-p no:cacheprovider -q --workloads mlp
      --convergence-workloads mlp --rounds 2 --steps-per-round 1 --warmup-steps 1
      --convergence-steps 5 --max-bytes 65536 --collective-iters 5 --test-time-limit 300)

# `hvd-vs-ddp run`: every cell of the quick preset (8, gpt only, one repetition) at these
# sizes: what is checked is that the runner, its launchers and its report work in the image.
RUN_SIZES="--rounds 2 --steps-per-round 1 --warmup-steps 1 --convergence-steps 3 --max-bytes 4096 --collective-iters 5 --convergence-workloads mlp"

MODE=all FROM_NOTHING=0
for arg in "$@"; do
  case $arg in
    --from-nothing) FROM_NOTHING=1 ;;
    --build-only) MODE=build ;;
    --no-build) MODE=checks ;;
    --clean) MODE=clean ;;
    -h|--help) sed -n '2,/^# The steps are/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "build_image: error: unknown argument '$arg' (expected --from-nothing, --build-only, --no-build, --clean)" >&2; exit 2 ;;
  esac
done
[[ $(id -u) -eq 0 ]] || { echo "build_image: error: run as root (debootstrap, buildah's chroot isolation and vfs storage need it)" >&2; exit 2; }

START=$SECONDS
SUMMARY=()
CTR=""
cleanup() { if [[ -n $CTR ]]; then buildah rm "$CTR" >/dev/null 2>&1 || true; fi; }
trap cleanup EXIT
step() {  # step NAME COMMAND...: run it, time it, name it when it fails
  local name=$1 t0=$SECONDS rc=0
  shift
  echo "== build_image: $name"
  # A subshell with -e of its own: `"$@" || rc=$?` would switch -e off inside the step.
  set +e
  (set -e; "$@")
  rc=$?
  set -e
  local took=$((SECONDS - t0))
  SUMMARY+=("$(printf '%-10s %5ds  %s' "$name" "$took" "$([[ $rc -eq 0 ]] && echo ok || echo "FAILED (exit $rc)")")")
  if [[ $rc -ne 0 ]]; then
    echo "build_image: step '$name' failed (exit $rc) after ${took}s" >&2
    printf '  %s\n' "${SUMMARY[@]}" >&2
    exit 1
  fi
  echo "== build_image: $name: ok in ${took}s"
}

tools() {
  local need=()
  command -v buildah >/dev/null || need+=(buildah)
  command -v debootstrap >/dev/null || need+=(debootstrap)
  if ((${#need[@]})); then
    echo "installing ${need[*]} from Debian's archive"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
  buildah --version
}

have_image() { buildah inspect --type image "$1" >/dev/null 2>&1; }

base() {
  if have_image "$BASE"; then echo "$BASE is here"; return 0; fi
  local root ctr
  root=$(mktemp -d "${TMPDIR:-/var/tmp}/minbase.XXXXXX")
  # shellcheck disable=SC2064
  trap "rm -rf '$root'" RETURN
  debootstrap --variant=minbase bookworm "$root/rootfs" "$MIRROR" >"$root/debootstrap.log" 2>&1 \
    || { tail -n 20 "$root/debootstrap.log" >&2; return 1; }
  rm -rf "$root/rootfs/var/cache/apt/archives/"*.deb "$root/rootfs/var/lib/apt/lists/"*
  tar -C "$root/rootfs" -cf "$root/rootfs.tar" .
  ctr=$(buildah from scratch)
  buildah add "$ctr" "$root/rootfs.tar" / >/dev/null
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --cmd /bin/bash --label org.opencontainers.image.description="Debian bookworm minbase from $MIRROR (scripts/build_image.sh)" "$ctr"
  buildah commit --rm "$ctr" "$BASE" >/dev/null
  echo "made $BASE from Debian's archive ($(du -sh "$root/rootfs" | cut -f1))"
}

build() {
  # This machine reaches PyPI through a TLS-inspecting proxy whose CA is in the host's
  # bundle: handed to the build as the secret "ca" (the Dockerfile says how it is used;
  # it stays out of the image).
  local ca=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt} SECRET=()
  if [[ -s $ca ]]; then SECRET=(--secret "id=ca,src=$ca"); fi
  local before
  before=$(buildah images -q --no-trunc "$IMAGE" 2>/dev/null || true)
  # --format docker: the OCI format has no SHELL (buildah ignores it there, and the
  # Dockerfile's RUNs need bash); docker build writes this format too.
  buildah bud --layers --force-rm --format docker --pull=never --isolation chroot \
    --build-arg BASE_IMAGE="$BASE" --build-arg HVD_VS_DDP_JOBS="$(nproc)" \
    --build-arg REVISION="$(git rev-parse HEAD 2>/dev/null || true)" \
    --build-arg CREATED="$(date -u +%FT%TZ)" "${SECRET[@]}" \
    -t "$IMAGE" -f Dockerfile .
  echo "$(buildah inspect --type image --format '{{len .OCIv1.RootFS.DiffIDs}}' "$IMAGE") layers," \
    "$(buildah images --format '{{.Name}}:{{.Tag}} {{.Size}}' "$IMAGE")"
  # The previous build of this name, now untagged: its own layers go (vfs keeps each one
  # whole, ~8 GB), the layers it shares with this build and the build caches stay.
  if [[ -n $before && $before != "$(buildah images -q --no-trunc "$IMAGE")" ]]; then
    before=${before#sha256:}
    if buildah rmi "$before" >/dev/null 2>&1; then echo "removed the previous build ${before:0:12}"; fi
  fi
}

secrets() {
  local dir rc=0
  dir=$(mktemp -d "${TMPDIR:-/var/tmp}/image-layers.XXXXXX")
  buildah push --disable-compression --quiet "$IMAGE" "oci:$dir/oci" >/dev/null \
    && python3 "$ROOT/scripts/image_secrets.py" "$dir/oci" || rc=$?
  rm -rf "$dir"  # ~8 GB
  return "$rc"
}

inside() {  # inside NAME SHELL-COMMAND: run it in the image as its user, /out mounted
  echo "\$ $2"
  # --uts host: the host's name, which its /etc/hosts resolves (buildah run names the
  # container by its id and leaves it out of /etc/hosts: torchrun's c10d store then hangs).
  buildah run --isolation chroot --uts host -v "$OUT:/out" "$CTR" -- bash -c "$2"
}

checks() {
  mkdir -p "$OUT"
  chown 1001:1001 "$OUT"
  CTR=$(buildah from --pull=never "$IMAGE")
  local tiny="${TINY[*]}"
  step user inside user '[[ $(id -u) == 1001 ]] && echo "running as $(id -un) (uid $(id -u))"'
  step doctor inside doctor 'hvd-vs-ddp doctor && horovodrun --check-build | tee /tmp/cb \
    && for w in PyTorch MPI Gloo NCCL; do grep -qE "\[X\] $w\$" /tmp/cb || { echo "Horovod lacks $w" >&2; exit 1; }; done \
    && python -c "import torch; assert torch.version.cuda, \"torch is not a CUDA build\"; print(\"torch\", torch.__version__, \"CUDA\", torch.version.cuda)"'
  step horovodrun inside horovodrun "horovodrun -np 2 python -m pytest suites/ $tiny"
  step torchrun inside torchrun "torchrun --standalone --nproc-per-node 2 -m pytest suites/ $tiny"
  # tox's set-up (scripts/setup.sh) must find the image's Horovod, not compile another.
  step tox-ddp inside tox-ddp "set -o pipefail; tox -e ddp -- $tiny 2>&1 | tee /tmp/tox.log \
    && if grep -q 'build_horovod: building' /tmp/tox.log; then echo 'tox compiled Horovod again' >&2; exit 1; fi"
  step run inside run "rm -rf /out/runs/image-quick /out/reports/image-quick \
    && hvd-vs-ddp run --preset quick --repeat 1 --workloads gpt --runs-dir /out/runs --name image-quick \
         --suite-args \"$RUN_SIZES\" \
    && hvd-vs-ddp report /out/runs/image-quick -o /out/reports/image-quick/report.html \
    && ls -l /out/reports/image-quick"
  buildah rm "$CTR" >/dev/null
  CTR=""
}

clean() {
  buildah rm --all >/dev/null 2>&1 || true
  buildah rmi -f "$IMAGE" "$BASE" >/dev/null 2>&1 || true
  buildah rmi --prune >/dev/null 2>&1 || true  # the cached layers, now dangling
  rm -rf "$CACHE_DIR"
  echo "removed $IMAGE, $BASE, their layers and the build caches ($CACHE_DIR)"
}

main() {  # all of it parsed before it runs: the file may change during a build
  if [[ $MODE == clean ]]; then step clean clean; return 0; fi
  step tools tools
  if ((FROM_NOTHING)); then step clean clean; fi
  if [[ $MODE == checks ]]; then
    have_image "$IMAGE" || { echo "build_image: error: no image $IMAGE to check; build it first" >&2; return 2; }
    checks
    step secrets secrets
  else
    step base base
    step build build
    step secrets secrets
    if [[ $MODE == all ]]; then checks; fi
  fi
  echo "build_image: done in $((SECONDS - START))s"
  printf '  %s\n' "${SUMMARY[@]}"
}
main; exit $?
