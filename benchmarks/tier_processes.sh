#!/usr/bin/env bash
# Where a test tier's CPU goes, process by process: Linux process accounting (Debian's
# `acct`: accton, sa) records every process that ends while the tier runs, with its CPU
# seconds. The summary: CPU by command name (a rank's name is often its last thread's,
# pt_gloo_runloop or pt_elastic, not python), how many Python processes did real work
# (2 CPU-s or more: about what `import torch` alone costs here), and what importing
# torch, and torch._dynamo (every optimizer imports it), cost one process on this
# machine: the part of the tier no test can make faster, only fewer processes.
# Root only (accton); the machine should be otherwise idle.
#
#   bash benchmarks/tier_processes.sh                         # tests/system, core tier
#   bash benchmarks/tier_processes.sh tests/unit -n auto      # any pytest arguments
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${HVD_VS_DDP_VENV:-$ROOT/.venv}"
if ! command -v accton >/dev/null || ! command -v sa >/dev/null; then
    echo "tier_processes: error: needs process accounting (apt-get install acct)" >&2
    exit 2
fi
if [[ $(id -u) -ne 0 ]]; then
    echo "tier_processes: error: accton needs root" >&2
    exit 2
fi
[[ $# -gt 0 ]] || set -- tests/system -n 2 --system-tier core
acct_file="$(mktemp -d)/pacct"
touch "$acct_file"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 CI="${CI:-true}"
export PATH="$VENV/bin:$PATH"
unset PYTHONDONTWRITEBYTECODE
cd "$ROOT"
accton "$acct_file" >/dev/null
trap 'accton off >/dev/null' EXIT
start=$(date +%s)
set +e
"$VENV/bin/python" -m pytest -p no:cacheprovider -q "$@" | tail -1
set -e
accton off >/dev/null
trap - EXIT
echo "tier_processes: pytest ran $(( $(date +%s) - start )) s"
torch_s=$(/usr/bin/time -f %U "$VENV/bin/python" -c "import torch" 2>&1 >/dev/null | tail -1)
dynamo_s=$(/usr/bin/time -f %U "$VENV/bin/python" -c "import torch, torch._dynamo" 2>&1 \
    >/dev/null | tail -1)
printf "%-20s %9s %10s\n" command processes CPU-s
# sa -u (read once): user, CPU-s, memory, io, command, and "*" for a fork that ran no new
# program (listed as command*)
records=$(sa -u "$acct_file" 2>/dev/null)
awk '{ k = ($NF == "*") ? $(NF - 1) "*" : $NF; cpu[k] += $2; n[k]++ }
    END { for (k in cpu) if (cpu[k] >= 1) printf "%-20s %9d %10.1f\n", k, n[k], cpu[k] }' \
    <<<"$records" | sort -k3 -n -r
awk -v torch="$torch_s" -v dynamo="$dynamo_s" '
    { all += $2; k = ($NF == "*") ? $(NF - 1) : $NF
      if (k ~ /python|^pt_|gloo|tcpstore/ && $2 >= 2) { big++; big_s += $2 } }
    END { printf "all processes: %.0f CPU-s\n", all
          printf "Python processes of 2 CPU-s or more: %d, %.0f CPU-s\n", big, big_s
          printf "import torch: %.2f CPU-s a process; with torch._dynamo: %.2f\n", torch, dynamo }' \
    <<<"$records"
